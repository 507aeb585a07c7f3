#include <stdio.h>
#include "config.h"
#include "wordfreq.h"

int main(void)
{
    static struct freq f;
    count_words(&f, stdin);
    print_top(&f, TOP_N);
    return 0;
}
