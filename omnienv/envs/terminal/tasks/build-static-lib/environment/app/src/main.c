#include <stdio.h>
#include <stdlib.h>
#include "textstat.h"

static char *slurp(FILE *f)
{
    size_t cap = 4096, n = 0, r;
    char *buf = malloc(cap);
    while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n - 1 == 0)
            buf = realloc(buf, cap *= 2);
    }
    if (buf)
        buf[n] = '\0';
    return buf;
}

int main(int argc, char **argv)
{
    FILE *f = argc > 1 ? fopen(argv[1], "r") : stdin;
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    char *text = slurp(f);
    if (!text)
        return 1;
    printf("lines: %zu\nwords: %zu\nlongest: %zu\n", ts_lines(text), ts_words(text), ts_longest_line(text));
    free(text);
    return 0;
}
