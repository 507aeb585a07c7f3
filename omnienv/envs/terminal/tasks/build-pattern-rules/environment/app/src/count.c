#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "wordfreq.h"

static void add(struct freq *f, const char *w)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->word[i], w) == 0) {
            f->count[i]++;
            return;
        }
    if (f->n < MAX_WORDS) {
        strcpy(f->word[f->n], w);
        f->count[f->n++] = 1;
    }
}

void count_words(struct freq *f, FILE *in)
{
    char w[MAX_LEN];
    int len = 0, c;
    while ((c = fgetc(in)) != EOF) {
        if (isalpha(c)) {
            if (len < MAX_LEN - 1)
                w[len++] = (char)tolower(c);
        } else if (len) {
            w[len] = '\0';
            add(f, w);
            len = 0;
        }
    }
    if (len) {
        w[len] = '\0';
        add(f, w);
    }
}
