#include "stack.h"

int push(struct stack *s, double x)
{
    if (s->n >= STACK_MAX)
        return -1;
    s->v[s->n++] = x;
    return 0;
}

int pop(struct stack *s, double *x)
{
    if (s->n <= 0)
        return -1;
    *x = s->v[--s->n];
    return 0;
}
