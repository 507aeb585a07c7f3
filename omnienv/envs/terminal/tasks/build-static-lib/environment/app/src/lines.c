#include "textstat.h"

size_t ts_lines(const char *text)
{
    size_t n = 0;
    const char *last = text;
    for (; *text; text++)
        if (*text == '\n') {
            n++;
            last = text + 1;
        }
    return n + (*last != '\0');
}

size_t ts_longest_line(const char *text)
{
    size_t best = 0, cur = 0;
    for (; *text; text++) {
        if (*text == '\n') {
            cur = 0;
            continue;
        }
        if (++cur > best)
            best = cur;
    }
    return best;
}
