"""JSON every parser reads: numbers that are not finite are written as null."""

from __future__ import annotations

import json
import math

from gym._core._json import dumps, finite


def strict(text: str) -> object:
    """Parse as a strict reader does: ``NaN`` and ``Infinity`` are refused."""

    def refuse(name: str) -> object:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_are_null_at_any_depth():
    data = {"a": math.nan, "b": [1.5, math.inf, {"c": -math.inf}], "d": (2, math.nan), "e": "NaN"}
    assert strict(dumps(data)) == {
        "a": None,
        "b": [1.5, None, {"c": None}],
        "d": [2, None],
        "e": "NaN",
    }


def test_finite_values_pass_unchanged():
    data = {"x": 0.25, "n": 3, "s": "s", "t": True, "z": None}
    assert finite(data) == data
    assert strict(dumps(data, indent=2)) == data
