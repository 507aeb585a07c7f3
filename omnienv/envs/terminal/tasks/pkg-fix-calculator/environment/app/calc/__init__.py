from .lexer import tokenize
from .parser import evaluate

__all__ = ["evaluate", "tokenize"]
