"""Reading the judge's verdict out of a model's free-form answer."""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal

from gym._core._errors import GradingError
from gym._core._tools import json_objects

__all__ = ["Preference", "parse_json_object", "reason_text", "score_value", "winner_value"]

Preference = Literal["a", "b", "tie"]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.S)
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_WINNERS: dict[str, Preference] = {"a": "a", "b": "b", "tie": "tie", "draw": "tie"}


def parse_json_object(text: str, key: str) -> dict[str, Any]:
    """The JSON object holding ``key`` in a model's answer.

    Fenced blocks (```json ... ```) are read first, then the bare text; within each,
    the last object holding the key wins (a model may quote the format before it
    answers). ``<think>`` blocks are ignored.

    Raises:
        GradingError: no such object.
    """
    body = _THINK.sub("", text)
    for chunk in [m.group(1) for m in _FENCE.finditer(body)] + [body]:
        found = [obj for obj in json_objects(chunk) if isinstance(obj, dict) and key in obj]
        if found:
            return found[-1]
    shown = " ".join(text.split())[:300]
    raise GradingError(f"the judge's answer holds no JSON object with {key!r}: {shown!r}")


def score_value(value: Any, text: str) -> float:
    """A ``score`` field as a number in [0, 1].

    Raises:
        GradingError: it is not one (``text``, the whole answer, is quoted).
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
        raise GradingError(
            f"the judge's score {value!r} is not a number in [0, 1] "
            f"(answer: {' '.join(text.split())[:200]!r})"
        )
    return number


def winner_value(value: Any, text: str) -> Preference:
    """A ``winner`` field as ``a``, ``b`` or ``tie`` (``Answer A``, ``draw`` accepted).

    Raises:
        GradingError: it is none of them.
    """
    word = str(value).strip().lower().removeprefix("answer").strip() if value is not None else ""
    if word not in _WINNERS:
        raise GradingError(
            f"the judge's winner {value!r} is not A, B or tie "
            f"(answer: {' '.join(text.split())[:200]!r})"
        )
    return _WINNERS[word]


def reason_text(value: Any) -> str:
    """A ``reason`` field as text (JSON for anything that is not a string)."""
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)
