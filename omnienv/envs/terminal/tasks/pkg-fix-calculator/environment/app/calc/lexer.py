"""Tokens of arithmetic expressions."""
import re

_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?)|(.))")


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
