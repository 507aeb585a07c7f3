#include <stdio.h>
#include "hist.h"

void hist_init(struct hist *h, double lo, double hi, int nbuckets)
{
    h->lo = lo;
    h->hi = hi;
    h->nbuckets = nbuckets;
    h->outside = 0;
    for (size_t i = 0; i < nbuckets; i++)
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
    printf("outside: %d\n", h->outside);
}
