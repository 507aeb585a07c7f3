#include <ctype.h>
#include "textstat.h"

size_t ts_words(const char *text)
{
    size_t n = 0;
    int in = 0;
    for (; *text; text++) {
        if (isspace((unsigned char)*text))
            in = 0;
        else if (!in) {
            in = 1;
            n++;
        }
    }
    return n;
}
