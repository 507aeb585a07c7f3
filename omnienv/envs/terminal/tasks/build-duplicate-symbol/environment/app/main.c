#include <stdio.h>
#include <string.h>
#include "config.h"
#include "items.h"

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
