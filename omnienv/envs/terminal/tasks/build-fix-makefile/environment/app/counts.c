#include <ctype.h>
#include "counts.h"

struct counts count_stream(FILE *in)
{
    struct counts c = {0, 0, 0};
    int ch, in_word = 0;
    while ((ch = fgetc(in)) != EOF) {
        c.chars++;
        if (ch == '\n')
            c.lines++;
        if (isspace(ch)) {
            in_word = 0;
        } else if (!in_word) {
            in_word = 1;
            c.words++;
        }
    }
    return c;
}
