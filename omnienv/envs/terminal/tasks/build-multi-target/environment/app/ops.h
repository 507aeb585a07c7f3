#ifndef OPS_H
#define OPS_H
#include "stack.h"

/* Applies operator tok to the stack. Returns 0, or an error message. */
const char *apply(struct stack *s, const char *tok);
int is_operator(const char *tok);

#endif
