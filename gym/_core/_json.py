"""JSON that every reader parses: a number that is not finite (NaN, infinity) is ``null``.

Python's `json` writes ``NaN`` and ``Infinity``, which are not JSON: ``jq``, JavaScript
and most parsers refuse the whole document. A statistic over no episodes is NaN, so every
JSON the CLI writes goes through `dumps`.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["dumps", "finite"]


def finite(value: Any) -> Any:
    """The value with every non-finite float, at any depth of dicts, lists and tuples, None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **kwargs: Any) -> str:
    """`json.dumps` of `finite` (the value): ``null`` where a number is not finite."""
    return json.dumps(finite(value), allow_nan=False, **kwargs)
