#ifndef TEXTSTAT_H
#define TEXTSTAT_H
#include <stddef.h>

size_t ts_words(const char *text);
size_t ts_lines(const char *text);
size_t ts_longest_line(const char *text);

#endif
