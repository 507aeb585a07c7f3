"""Evaluate arithmetic expressions.

Grammar, loosest first: + and - (left-associative), then * and / (left-associative), then unary
minus and plus, then ^ (power, right-associative, binding tighter than a unary minus on its
left: -2^2 is -4, 2^-1 is 0.5), then numbers and parenthesised expressions.
evaluate() returns a float; ValueError for malformed input (empty, unbalanced parentheses,
missing operands, anything left over), ZeroDivisionError for division by zero.
"""
from .lexer import tokenize
class _Parser:
    def __init__(self, tokens):
        self.tokens, self.pos = tokens, 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self):
        tok = self.peek()
        if tok is None:
            raise ValueError("unexpected end of expression")
        self.pos += 1
        return tok

    def expr(self):
        left = self.term()
        if self.peek() in ("+", "-"):
            op = self.take()
            right = self.expr()
            left = left + right if op == "+" else left - right
        return left

    def term(self):
        left = self.power()
        while self.peek() in ("*", "/"):
            op = self.take()
            right = self.power()
            left = left * right if op == "*" else left / right
        return left

    def power(self):
        base = self.atom()
        while self.peek() == "^":
            self.take()
            base = base ** self.atom()
        return base

    def atom(self):
        tok = self.take()
        if tok == "-" and isinstance(self.peek(), float):
            return -self.take()
        if isinstance(tok, float):
            return tok
        if tok == "(":
            value = self.expr()
            if self.take() != ")":
                raise ValueError("expected )")
            return value
        raise ValueError(f"unexpected token {tok!r}")


def evaluate(text):
    parser = _Parser(tokenize(text))
    return float(parser.expr())
