"""Thread-safe parsing of Python source.

CPython 3.11's AST constructor keeps a recursion counter that is not safe across
threads: parsing from several threads at once can fail with "SystemError: AST
constructor recursion depth mismatch" (python/cpython#106905). Graders run in
parallel threads, so every parse goes through one lock.
"""

from __future__ import annotations

import ast
import threading

__all__ = ["literal", "parse_expression", "parse_python"]

_lock = threading.Lock()


def parse_python(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse`, one thread at a time."""
    with _lock:
        return ast.parse(source, filename=filename)


def parse_expression(source: str) -> ast.expr:
    """`ast.parse(source, mode="eval").body`, one thread at a time."""
    with _lock:
        return ast.parse(source, mode="eval").body


def literal(source: str) -> object:
    """`ast.literal_eval(source)`, one thread at a time (it parses)."""
    with _lock:
        return ast.literal_eval(source)
