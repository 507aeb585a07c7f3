#include <stdio.h>
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
