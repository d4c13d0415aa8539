"""Evaluating syntax trees exactly."""

from fractions import Fraction

from arith.errors import CalcError
from arith.parser import parse


def evaluate(node):
    """The Fraction value of a syntax tree."""
    if isinstance(node, Fraction):
        return node
    if node[0] == "neg":
        return -evaluate(node[1])
    op, left, right = node
    a, b = evaluate(left), evaluate(right)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        if b == 0:
            raise CalcError("division by zero")
        return a / b
    if op == "**":
        if b.denominator != 1:
            raise CalcError("exponents must be whole numbers")
        if a == 0 and b < 0:
            raise CalcError("zero to a negative power")
        return a ** int(b)
    raise CalcError(f"unknown operator {op!r}")


def calculate(text):
    """Parse and evaluate an expression; the result is a Fraction."""
    return evaluate(parse(text))
