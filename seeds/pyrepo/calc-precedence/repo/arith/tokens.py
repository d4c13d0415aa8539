"""Splitting an expression into tokens."""

import re
from fractions import Fraction

from arith.errors import ParseError

TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?)|(\*\*|[-+*/()]))")


def tokenize(text):
    """A list of Fraction numbers and operator strings ('+', '**', '(', ...)."""
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        match = TOKEN.match(text, pos)
        if not match:
            raise ParseError(f"unexpected character {text[pos:].lstrip()[:1]!r} at {pos}")
        number, op = match.groups()
        tokens.append(Fraction(number) if number is not None else op)
        pos = match.end()
    return tokens
