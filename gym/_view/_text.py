r"""Model output is hostile text: make any string safe to print, and cut big ones.

Escaping for HTML is the template engine's job (autoescape, exactly once). What is
done here comes before it, on plain strings: `clean` (from `gym._core._text`, the one
function that neutralizes text for people: lone surrogates, terminal escapes, control
and bidirectional characters), and cutting text over a budget, the page linking to the
whole of it.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from gym._core._text import clean, plain

__all__ = ["Snippet", "clean", "display", "plain", "snippet"]

MAX_CHARS = 20_000
MAX_LINES = 400


class Snippet(BaseModel):
    """The start of a text that may be too big to show whole."""

    text: str
    """What is shown."""
    more: int = 0
    """Characters left out (0 when the text is whole)."""
    raw: str = ""
    """Relative link to the whole text, served as text/plain ('' when none)."""


def snippet(
    text: str, raw: str = "", *, max_chars: int = MAX_CHARS, max_lines: int = MAX_LINES
) -> Snippet:
    """The first ``max_chars`` characters and ``max_lines`` lines of a text."""
    shown = text[:max_chars]
    cut_at = -1
    for _ in range(max_lines):
        cut_at = shown.find("\n", cut_at + 1)
        if cut_at < 0:
            break
    if cut_at >= 0:
        shown = shown[:cut_at]
    more = len(text) - len(shown)
    return Snippet(text=shown, more=more, raw=raw if more else "")


def display(value: Any) -> str:
    """Message content or tool arguments as text (strings as they are, the rest as JSON)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, dict) for p in value):
        parts = [p.get("text") for p in value]
        if all(isinstance(t, str) for t in parts):
            return "\n".join(t for t in parts if isinstance(t, str))
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
