#!/bin/bash
set -e
cd /app
cat > vowels.h <<'CEOF'
#ifndef VOWELS_H
#define VOWELS_H
#include <stddef.h>

size_t count_vowels(const char *s);
size_t longest_word(const char *s, char *out, size_t outsize);

#endif
CEOF
cat > vowels.c <<'CEOF'
#include <ctype.h>
#include <string.h>
#include "vowels.h"

size_t count_vowels(const char *s)
{
    size_t n = 0;
    for (; *s; s++) {
        char c = tolower((unsigned char)*s);
        if (c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u')
            n++;
    }
    return n;
}

/* Copies the longest run of letters of s (the first one if several) into out. */
size_t longest_word(const char *s, char *out, size_t outsize)
{
    size_t best = 0, best_at = 0, i = 0;
    while (s[i]) {
        size_t start = i;
        while (s[i] && isalpha((unsigned char)s[i]))
            i++;
        if (i - start > best) {
            best = i - start;
            best_at = start;
        }
        if (s[i])
            i++;
    }
    size_t n = best < outsize - 1 ? best : outsize - 1;
    memcpy(out, s + best_at, n);
    out[n] = '\0';
    return best;
}
CEOF
cat > main.c <<'CEOF'
#include <stdio.h>
#include <string.h>
#include "vowels.h"

int main(void)
{
    char line[1024], word[64];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = '\0';
        size_t len = longest_word(line, word, sizeof word);
        printf("%zu %zu %zu %s\n", count_vowels(line), strlen(line), len, word);
    }
    return 0;
}
CEOF
make
