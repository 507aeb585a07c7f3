#ifndef CONFIG_H
#define CONFIG_H

/* how many words to print, and what goes between a word and its count */
#define TOP_N 5
#define SEP " "

#endif
