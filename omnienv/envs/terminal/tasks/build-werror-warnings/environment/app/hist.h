#ifndef HIST_H
#define HIST_H
#include <stddef.h>

struct hist {
    double lo, hi;
    int nbuckets;
    int counts[64];
    size_t outside;
};

void hist_init(struct hist *h, double lo, double hi, int nbuckets);
void hist_add(struct hist *h, double x);
int max_count(const struct hist *h);
void hist_print(const struct hist *h, char mark);

#endif
