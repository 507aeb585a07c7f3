#include <stdio.h>
#include <stdlib.h>
#include "hist.h"

/* usage: histogram LO HI N [MARK] < numbers */
int main(int argc, char **argv)
{
    struct hist h;
    double x;
    int total = 0;
    if (argc < 4) {
        fprintf(stderr, "usage: histogram LO HI N [MARK]\n");
        return 2;
    }
    int n = atoi(argv[3]);
    if (n < 1 || n > 64) {
        fprintf(stderr, "histogram: N must be between 1 and 64\n");
        return 2;
    }
    hist_init(&h, atof(argv[1]), atof(argv[2]), n);
    while (scanf("%lf", &x) == 1) {
        hist_add(&h, x);
        total++;
    }
    hist_print(&h, argc > 4 ? argv[4][0] : '#');
    return 0;
}
