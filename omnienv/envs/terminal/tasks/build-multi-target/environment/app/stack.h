#ifndef STACK_H
#define STACK_H

#define STACK_MAX 64

struct stack {
    double v[STACK_MAX];
    int n;
};

int push(struct stack *s, double x);
int pop(struct stack *s, double *x);

#endif
