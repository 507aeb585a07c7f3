#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "wordfreq.h"

static struct freq *sorting;

static int cmp(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    if (sorting->count[i] != sorting->count[j])
        return sorting->count[j] - sorting->count[i];
    return strcmp(sorting->word[i], sorting->word[j]);
}

void print_top(struct freq *f, int top)
{
    static int idx[MAX_WORDS];
    for (int i = 0; i < f->n; i++)
        idx[i] = i;
    sorting = f;
    qsort(idx, f->n, sizeof idx[0], cmp);
    for (int i = 0; i < f->n && i < top; i++)
        printf("%s" SEP "%d\n", f->word[idx[i]], f->count[idx[i]]);
}
