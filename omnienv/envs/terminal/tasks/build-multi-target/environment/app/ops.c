#include <math.h>
#include <string.h>
#include "ops.h"

int is_operator(const char *tok)
{
    static const char *names[] = {"+", "-", "*", "/", "^", "neg", "dup", "swap", 0};
    for (int i = 0; names[i]; i++)
        if (strcmp(tok, names[i]) == 0)
            return 1;
    return 0;
}

const char *apply(struct stack *s, const char *tok)
{
    double a, b;
    if (strcmp(tok, "neg") == 0 || strcmp(tok, "dup") == 0) {
        if (pop(s, &a))
            return "stack underflow";
        if (tok[0] == 'n')
            return push(s, -a) ? "stack overflow" : 0;
        return push(s, a) || push(s, a) ? "stack overflow" : 0;
    }
    if (pop(s, &b) || pop(s, &a))
        return "stack underflow";
    if (strcmp(tok, "swap") == 0)
        return push(s, b) || push(s, a) ? "stack overflow" : 0;
    switch (tok[0]) {
    case '+': a = a + b; break;
    case '-': a = a - b; break;
    case '*': a = a * b; break;
    case '/':
        if (b == 0)
            return "division by zero";
        a = a / b;
        break;
    case '^': a = pow(a, b); break;
    }
    return push(s, a) ? "stack overflow" : 0;
}
