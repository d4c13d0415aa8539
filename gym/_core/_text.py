r"""Text we did not write, made safe to show to people: one function, `clean`.

Model output, labels, task ids and error messages can hold anything: lone surrogates
(invalid UTF-8 decoded with ``surrogateescape``, or JSON ``\ud800``) become U+FFFD so the
text can be encoded at all; terminal escape sequences are dropped; other control
characters and the bidirectional controls that reorder what a reader sees are shown as
``\xNN`` / ``\uNNNN``. Every viewer page, every terminal output of the CLI and every plot
title use it. It imports nothing heavy, so any layer may.
"""

from __future__ import annotations

import re

__all__ = ["clean", "plain"]

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
"""CSI sequences (colours, cursor moves), OSC sequences (titles, links), and 2-byte escapes."""
CONTROL = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
    r"\u202a-\u202e\u2066-\u2069]"
)
"""Control characters other than tab and newline, the line and paragraph separators, and
every bidirectional control: the marks (ALM, LRM, RLM), embeddings, overrides, isolates."""


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
