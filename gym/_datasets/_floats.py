"""Checks that compare floats as numbers, not as bit patterns.

Two correct programs that do the same arithmetic in another order can answer floats that
differ in their last bits (``r * r * a * pi / 360`` and ``pi * r ** 2 * a / 360``), and a
check written ``assert f(x) == 6.285714285714286`` fails one of them; so does ``assert
series_sum(7) == 140`` of a function that answers ``139.99999999999997``. `tolerant`
rewrites each ``assert A == B`` of a check's source as ``assert _close(A, B)``;
`close_source` is the function those checks call, written into the same check file. It
is ``==`` except that two numbers of which one is a float (and the parts of complex
numbers) are equal within ``rel_tol`` of each other, or 1e-12 apart, in lists and tuples
of the same type and length and dict values under the same keys too. An int is exact:
past 2**53, which a float cannot hold, it compares with ``==``, and below a float must
also be less than 0.5 from it (a float Bell number off by 1e39 passed MBPP/67 within the
relative tolerance, and a float 100 off an int near 1e12: red-team helpers). Anything
else, the code's own objects included, compares with ``==`` as before, so the checker's
boundary (docs/graders/boundary.md) is what it was: only exact ``int``, ``float`` and
``complex`` values, which cross as plain copies, are ever compared by tolerance.
"""

from __future__ import annotations

import ast

from gym._grading._ast import parse_python

__all__ = ["ABS_TOL", "close_source", "tolerant"]

ABS_TOL = 1e-12
"""How far apart two numbers near zero may be (a float sum that should be 0 is 1e-17)."""

_CLOSE = '''
def _close(actual, expected):
    """``actual == expected``, but numbers within {rel_tol!r} relative (or {abs_tol!r}
    apart) are equal where one is a float; against an int, less than 0.5 apart too.

    Added by boxgym's importer: correct arithmetic in another order differs in the
    last bits of a float. An int a float cannot hold (past 2**53) is exact: it compares
    with ==, and a float near an int must round to it. Containers compare item by item;
    anything else with ==.
    """
    import math

    numbers = (int, float)
    kinds = (type(actual), type(expected))
    pairs = zip(kinds, (actual, expected))
    if any(kind is int and abs(value) > 2**53 for kind, value in pairs):
        return actual == expected
    if float in kinds and kinds[0] in numbers and kinds[1] in numbers:
        try:
            near = math.isclose(actual, expected, rel_tol={rel_tol!r}, abs_tol={abs_tol!r})
        except OverflowError:
            return actual == expected
        return near and (int not in kinds or abs(actual - expected) < 0.5)
    if complex in kinds and all(kind in (*numbers, complex) for kind in kinds):
        def parts(number):  # an int stays an int: the rules for ints hold for its part
            return (number.real, number.imag) if type(number) is complex else (number, 0)
        return all(map(_close, parts(actual), parts(expected)))
    if kinds[0] is kinds[1] and kinds[0] in (list, tuple):
        return len(actual) == len(expected) and all(map(_close, actual, expected))
    if kinds == (dict, dict):
        return actual.keys() == expected.keys() and all(
            _close(actual[key], expected[key]) for key in expected
        )
    return actual == expected
'''


def close_source(rel_tol: float) -> str:
    """The source of ``_close``, the comparison `tolerant` asserts call."""
    return _CLOSE.format(rel_tol=float(rel_tol), abs_tol=ABS_TOL)


def _equality(node: ast.AST) -> ast.Compare | None:
    """The ``A == B`` an assert statement tests, if that is what it tests."""
    if not isinstance(node, ast.Assert):
        return None
    test = node.test
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        return test
    return None


class _Rewrite(ast.NodeTransformer):
    def __init__(self) -> None:
        self.changed = False

    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        test = _equality(node)
        if test is not None:
            self.changed = True
            call = ast.Call(ast.Name("_close", ast.Load()), [test.left, test.comparators[0]], [])
            node.test = ast.copy_location(call, test)
        return node


def tolerant(source: str) -> str:
    """The source with each ``assert A == B`` as ``assert _close(A, B)``.

    Every such assert, not only those over a float literal: ``assert f(6, 12) == 2`` of
    a function that answers floats is the same comparison. The source is returned as it
    was (comments and all) when it holds none.
    """
    tree = parse_python(source)
    rewrite = _Rewrite()
    tree = rewrite.visit(tree)
    if not rewrite.changed:
        return source
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
