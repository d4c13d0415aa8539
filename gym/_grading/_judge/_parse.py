"""Reading the judge's verdict out of a model's free-form answer.

The verdict is only what the judge itself said: each call tells the judge a nonce the
candidate cannot know (`gym._grading._judge._client`: a keyed hash of the call under a
secret of the process), and the verdict is the one JSON object of the answer carrying
it. An object the judge quoted from the candidate's work (a planted ``{"score": 1}``)
carries no nonce and is never read; an answer that was cut off (``finish_reason`` of
``length``, a ``<think>`` block left open) is no verdict at all.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal

from gym._core._errors import GradingError
from gym._core._tools import json_objects

__all__ = [
    "NoVerdict",
    "Preference",
    "parse_verdict",
    "reason_text",
    "score_value",
    "winner_value",
]

Preference = Literal["a", "b", "tie"]

_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_OPEN = re.compile(r"<think>", re.I)
_CLOSE = re.compile(r"</think>", re.I)
_WINNERS: dict[str, Preference] = {"a": "a", "b": "b", "tie": "tie", "draw": "tie"}


class NoVerdict(GradingError):  # noqa: N818 (what happened, as the other answers say it)
    """The judge answered, but with no verdict.

    No object carrying the call's nonce, two that disagree, a value out of range, an
    answer cut off, or a request it refused.

    Whose failure it is, the input's or the judge's, is decided by behaviour: the judge
    is asked a control case (`Judge`); only when that fails too is it the judge's.
    """


def _said(text: str) -> str:
    """The text a verdict may be read from.

    The answer without its closed ``<think>`` blocks (and, where a template opened the
    block in the prompt, without what precedes the last ``</think>``).

    Raises:
        NoVerdict: a ``<think>`` block was left open (the answer was cut while thinking).
    """
    body = _THINK.sub("", text)
    if _OPEN.search(body):
        raise NoVerdict("the judge's answer ends inside an unclosed <think> block")
    closes = list(_CLOSE.finditer(body))
    return body[closes[-1].end() :] if closes else body


def parse_verdict(text: str, nonce: str, key: str) -> dict[str, Any]:
    """The one JSON object of a judge's answer that carries ``"nonce": nonce`` and ``key``.

    Objects without the nonce (quoted from the candidate, or the format restated) are
    ignored; the same object said twice counts once.

    Raises:
        NoVerdict: none, two that differ, or an unclosed ``<think>`` block.
    """
    body = _said(text)
    found: dict[str, dict[str, Any]] = {}
    for obj in json_objects(body):
        if isinstance(obj, dict) and obj.get("nonce") == nonce and key in obj:
            found.setdefault(json.dumps(obj, sort_keys=True), obj)
    shown = " ".join(text.split())[:300]
    if not found:
        raise NoVerdict(
            f"the judge's answer holds no JSON object with {key!r} and this call's nonce: {shown!r}"
        )
    if len(found) > 1:
        raise NoVerdict(f"the judge's answer holds {len(found)} different verdicts: {shown!r}")
    return next(iter(found.values()))


def score_value(value: Any, text: str) -> float:
    """A ``score`` field as a number in [0, 1].

    Raises:
        NoVerdict: it is not one (``text``, the whole answer, is quoted).
    """
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise NoVerdict(
            f"the judge's score {value!r} is not a number in [0, 1] "
            f"(answer: {' '.join(text.split())[:200]!r})"
        )
    return number


def winner_value(value: Any, text: str) -> Preference:
    """A ``winner`` field as ``a``, ``b`` or ``tie`` (``Answer A``, ``draw`` accepted).

    Raises:
        NoVerdict: it is none of them.
    """
    word = str(value).strip().lower().removeprefix("answer").strip() if value is not None else ""
    if word not in _WINNERS:
        raise NoVerdict(
            f"the judge's winner {value!r} is not A, B or tie "
            f"(answer: {' '.join(text.split())[:200]!r})"
        )
    return _WINNERS[word]


def reason_text(value: Any) -> str:
    """A ``reason`` field as text (JSON for anything that is not a string)."""
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)
