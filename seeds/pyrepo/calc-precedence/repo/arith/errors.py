"""Errors."""


class CalcError(Exception):
    """An expression that cannot be evaluated."""


class ParseError(CalcError):
    """An expression that is not well formed."""
