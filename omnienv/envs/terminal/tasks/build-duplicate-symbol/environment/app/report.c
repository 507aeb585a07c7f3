#include <stdio.h>
#include "config.h"
#include "items.h"

void report(const struct items *it, int lines, int skipped)
{
    for (int i = 0; i < it->n; i++)
        printf("%-12s %6ld\n", it->name[i], it->total[i]);
    if (verbose)
        printf("%s: %d lines, %d skipped, %d items\n", app_name, lines, skipped, it->n);
}
