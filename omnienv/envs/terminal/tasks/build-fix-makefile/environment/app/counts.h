#ifndef COUNTS_H
#define COUNTS_H
#include <stdio.h>

struct counts {
    long lines, words, chars;
};

struct counts count_stream(FILE *in);
#endif
