#ifndef WORDFREQ_H
#define WORDFREQ_H

#define MAX_WORDS 2048
#define MAX_LEN 32

struct freq {
    char word[MAX_WORDS][MAX_LEN];
    int count[MAX_WORDS];
    int n;
};

void count_words(struct freq *f, FILE *in);
void print_top(struct freq *f, int top);

#endif
