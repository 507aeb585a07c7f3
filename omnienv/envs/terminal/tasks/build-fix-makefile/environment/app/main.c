#include <stdio.h>
#include "counts.h"

int main(void)
{
    struct counts c = count_stream(stdin);
    printf("%ld %ld %ld\n", c.lines, c.words, c.chars);
    return 0;
}
