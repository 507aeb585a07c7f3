#ifndef ITEMS_H
#define ITEMS_H

#define MAX_ITEMS 128

struct items {
    char name[MAX_ITEMS][32];
    long total[MAX_ITEMS];
    int n;
};

int parse_line(const char *line, char *name, int *qty);
void add_item(struct items *it, const char *name, int qty);
void report(const struct items *it, int lines, int skipped);

#endif
