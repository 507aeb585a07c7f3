#ifndef VOWELS_H
#define VOWELS_H

int count_vowels(const char *s);

#endif
