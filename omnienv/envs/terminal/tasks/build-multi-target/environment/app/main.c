#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops.h"

static void eval_line(char *line)
{
    struct stack s = {{0}, 0};
    const char *err = 0;
    char *tok = strtok(line, " \t\r\n");
    if (!tok)
        return;
    for (; tok && !err; tok = strtok(0, " \t\r\n")) {
        if (is_operator(tok)) {
            err = apply(&s, tok);
        } else {
            char *end;
            double x = strtod(tok, &end);
            if (*end) {
                printf("error: bad token %s\n", tok);
                return;
            }
            if (push(&s, x))
                err = "stack overflow";
        }
    }
    if (!err && s.n != 1) {
        printf("error: %d values left\n", s.n);
        return;
    }
    if (err)
        printf("error: %s\n", err);
    else
        printf("%.10g\n", s.v[0]);
}

int main(void)
{
    char line[1024];
    while (fgets(line, sizeof line, stdin))
        eval_line(line);
    return 0;
}
