"""Exact arithmetic on expressions such as '(1 + 2) * 3 / 4'."""

from arith.errors import CalcError, ParseError
from arith.evaluate import calculate, evaluate
from arith.parser import parse
from arith.tokens import tokenize

__all__ = ["CalcError", "ParseError", "calculate", "evaluate", "parse", "tokenize"]
