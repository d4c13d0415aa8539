"""A recursive-descent parser producing nested tuples.

Nodes: a Fraction (a number), ("neg", node), or (op, left, right) with op one of
'+', '-', '*', '/', '**'.

Grammar, loosest first:
    expr  := term (('+' | '-') term)*        left-associative
    term  := unary (('*' | '/') unary)*      left-associative
    unary := ('+' | '-') unary | power
    power := atom ('**' unary)?              right-associative, binds tighter than unary
    atom  := NUMBER | '(' expr ')'
"""

from fractions import Fraction

from arith.errors import ParseError
from arith.tokens import tokenize


class _Parser:
    def __init__(self, tokens):
        self.tokens = tokens
        self.pos = 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self):
        token = self.peek()
        if token is None:
            raise ParseError("unexpected end of expression")
        self.pos += 1
        return token

    def expr(self):
        node = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            node = (op, node, self.term())
        return node

    def term(self):
        node = self.unary()
        while self.peek() in ("*", "/"):
            op = self.take()
            node = (op, node, self.unary())
        return node

    def unary(self):
        if self.peek() == "-":
            self.take()
            return ("neg", self.unary())
        if self.peek() == "+":
            self.take()
            return self.unary()
        return self.power()

    def power(self):
        base = self.atom()
        if self.peek() == "**":
            self.take()
            return ("**", base, self.unary())
        return base

    def atom(self):
        token = self.take()
        if isinstance(token, Fraction):
            return token
        if token == "(":
            node = self.expr()
            if self.take() != ")":
                raise ParseError("expected ')'")
            return node
        raise ParseError(f"unexpected {token!r}")


def parse(text):
    """The syntax tree of an expression."""
    parser = _Parser(tokenize(text))
    if parser.peek() is None:
        raise ParseError("empty expression")
    node = parser.expr()
    if parser.peek() is not None:
        raise ParseError(f"unexpected {parser.peek()!r} after the expression")
    return node
