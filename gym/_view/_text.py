r"""Model output is hostile text: make any string safe to print, and cut big ones.

Escaping for HTML is the template engine's job (autoescape, exactly once). What is
done here comes before it, on plain strings: lone surrogates (invalid UTF-8 decoded
with ``surrogateescape``, or JSON ``\ud800``) become U+FFFD so the page can be
encoded at all; terminal escape sequences are dropped; other control characters and
the bidirectional controls that reorder what a reader sees are shown as ``\xNN`` /
``\uNNNN``; text over a budget is cut, and the page links to the whole of it.

`clean` is the one function that neutralizes text for people: every viewer page (HTML,
the raw text pages, the JSON the pages read) and any terminal output may use it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

__all__ = ["Snippet", "clean", "display", "plain", "snippet"]

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
"""CSI sequences (colours, cursor moves), OSC sequences (titles, links), and 2-byte escapes."""
CONTROL = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
    r"\u202a-\u202e\u2066-\u2069]"
)
"""Control characters other than tab and newline, the line and paragraph separators, and
every bidirectional control: the marks (ALM, LRM, RLM), embeddings, overrides, isolates."""

MAX_CHARS = 20_000
MAX_LINES = 400


def plain(text: str) -> str:
    """The text with lone surrogates replaced by U+FFFD, so that it encodes as UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str) -> str:
    """Printable text: valid Unicode, no terminal escapes, controls shown as escapes.

    Idempotent: cleaning cleaned text changes nothing.
    """
    text = ANSI.sub("", plain(text)).replace("\r\n", "\n").replace("\r", "\n")
    return CONTROL.sub(_visible, text)


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
