#!/bin/bash
set -e
cd /app
cat > config.h <<'CEOF'
#ifndef CONFIG_H
#define CONFIG_H

/* settings shared by all modules (defined in main.c) */
extern int verbose;
extern const char *app_name;

static inline int clamp_qty(int q)
{
    return q < 0 ? 0 : (q > 9999 ? 9999 : q);
}

#endif
CEOF
cat > main.c <<'CEOF'
#include <stdio.h>
#include <string.h>
#include "config.h"
#include "items.h"

int verbose = 0;
const char *app_name = "inventory";

int main(int argc, char **argv)
{
    static struct items it;
    char line[256], name[32];
    int qty, lines = 0, skipped = 0;
    if (argc > 1 && strcmp(argv[1], "-v") == 0)
        verbose = 1;
    while (fgets(line, sizeof line, stdin)) {
        lines++;
        if (parse_line(line, name, &qty))
            add_item(&it, name, qty);
        else
            skipped++;
    }
    report(&it, lines, skipped);
    return 0;
}
CEOF
make
