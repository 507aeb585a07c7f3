#!/bin/bash
set -e
cd /app
cat > hist.c <<'CEOF'
#include <stdio.h>
#include "hist.h"

void hist_init(struct hist *h, double lo, double hi, int nbuckets)
{
    h->lo = lo;
    h->hi = hi;
    h->nbuckets = nbuckets;
    h->outside = 0;
    for (int i = 0; i < nbuckets; i++)
        h->counts[i] = 0;
}

void hist_add(struct hist *h, double x)
{
    if (x < h->lo || x >= h->hi) {
        h->outside++;
        return;
    }
    int b = (int)((x - h->lo) / (h->hi - h->lo) * h->nbuckets);
    h->counts[b]++;
}

int max_count(const struct hist *h)
{
    int m = 0;
    for (int i = 0; i < h->nbuckets; i++)
        if (h->counts[i] > m)
            m = h->counts[i];
    return m;
}

void hist_print(const struct hist *h, char mark)
{
    int m = max_count(h);
    double width = (h->hi - h->lo) / h->nbuckets;
    for (int i = 0; i < h->nbuckets; i++) {
        int len = m ? h->counts[i] * 20 / m : 0;
        printf("[%7.2f, %7.2f) %4d ", h->lo + i * width, h->lo + (i + 1) * width, h->counts[i]);
        for (int j = 0; j < len; j++)
            putchar(mark);
        putchar('\n');
    }
    printf("outside: %zu\n", h->outside);
}
CEOF
cat > main.c <<'CEOF'
#include <stdio.h>
#include <stdlib.h>
#include "hist.h"

/* usage: histogram LO HI N [MARK] < numbers */
int main(int argc, char **argv)
{
    struct hist h;
    double x;
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
    }
    hist_print(&h, argc > 4 ? argv[4][0] : '#');
    return 0;
}
CEOF
make
