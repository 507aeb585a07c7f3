#!/bin/bash
set -e
cd /app
cat > calc/lexer.py <<'PYEOF'
"""Tokens of arithmetic expressions."""
import re

_TOKEN = re.compile(r"\s*(?:(\d+\.\d*|\.\d+|\d+)|(.))")


def tokenize(text):
    """Tokens of text: floats for numbers ("3", "2.5", ".5", "7."), one-character strings for
    the operators + - * / ^ and parentheses. Whitespace separates tokens and is dropped.
    ValueError for any other character.
    """
    tokens = []
    for number, other in _TOKEN.findall(text):
        if number:
            tokens.append(float(number))
        elif other in "+-*/^()":
            tokens.append(other)
        elif other.strip():
            raise ValueError(f"unexpected character {other!r}")
    return tokens
PYEOF
cat > calc/parser.py <<'PYEOF'
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
        while self.peek() in ("+", "-"):
            op = self.take()
            right = self.term()
            left = left + right if op == "+" else left - right
        return left

    def term(self):
        left = self.unary()
        while self.peek() in ("*", "/"):
            op = self.take()
            right = self.unary()
            left = left * right if op == "*" else left / right
        return left

    def unary(self):
        if self.peek() in ("-", "+"):
            op = self.take()
            value = self.unary()
            return -value if op == "-" else value
        return self.power()

    def power(self):
        base = self.atom()
        if self.peek() == "^":
            self.take()
            return base ** self.unary()
        return base

    def atom(self):
        tok = self.take()
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
    value = parser.expr()
    if parser.peek() is not None:
        raise ValueError(f"unexpected token {parser.peek()!r}")
    return float(value)
PYEOF
python3 -m unittest 2>&1 | tail -n 3
