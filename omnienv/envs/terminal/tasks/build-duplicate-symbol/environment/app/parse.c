#include <stdio.h>
#include <string.h>
#include "config.h"
#include "items.h"

/* "NAME QTY": returns 1 and fills name/qty (clamped to 0..9999), or 0 for a bad line. */
int parse_line(const char *line, char *name, int *qty)
{
    char extra[2];
    int q;
    if (sscanf(line, "%31s %d %1s", name, &q, extra) != 2)
        return 0;
    *qty = clamp_qty(q);
    return 1;
}

void add_item(struct items *it, const char *name, int qty)
{
    for (int i = 0; i < it->n; i++)
        if (strcmp(it->name[i], name) == 0) {
            it->total[i] += qty;
            return;
        }
    if (it->n < MAX_ITEMS) {
        strcpy(it->name[it->n], name);
        it->total[it->n++] = qty;
    }
}
