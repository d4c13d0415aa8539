"""Checks that compare floats as numbers: which asserts are rewritten, and what ``_close`` says."""

from __future__ import annotations

import math
from typing import Any

import pytest

from gym.datasets import close_source, tolerant


def _close() -> Any:
    namespace: dict[str, Any] = {}
    exec(close_source(1e-9), namespace)
    return namespace["_close"]


def test_every_equality_assert_is_rewritten_and_nothing_else():
    source = "assert f(6, 12) == 2, 'msg'\nassert f(1) != 2.0\nassert a == b == 1.0\n"
    assert tolerant(source) == (
        "assert _close(f(6, 12), 2), 'msg'\nassert f(1) != 2.0\nassert a == b == 1.0\n"
    )
    kept = "assert f(1) < 2.0  # a comment stays\n"
    assert tolerant(kept) == kept


def test_the_same_arithmetic_in_another_order_is_equal():
    close = _close()
    pi = 22 / 7
    reference, reordered = (pi * 9 * 9) * (45 / 360), 9**2 * 45 * pi / 360
    assert reference != reordered  # MBPP/746's second assert failed correct code
    assert close(reordered, reference)
    assert close(math.nextafter(31.8, 99), 31.8) and close(2.0000000000000004, 2)
    assert close(1e-17, 0.0) and close(-2 + 1.2e-16j, -2 + 2.4e-16j)
    assert close([4.0, 2.5, 2], [4, 2.5000000000000004, 2.0])
    assert close({"a": (1.0, 0.1 + 0.2)}, {"a": (1, 0.3)})
    assert close(2.0**60, 2**60) and close(9007199254740991.0, 2**53 - 1)  # exact: equal
    assert close(1e12 + 0.25, 10**12) and close(139.99999999999997, 140)  # rounds to the int
    assert close(complex(139.99999999999997, 1e-17), 140) and close(3 + 0j, 3)


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        (6.2832, 6.285714285714286),  # math.pi where the task's pi is 22/7
        (1.000001, 1.0),
        (1e-9, 0.0),
        ([1.0, 2.0], (1.0, 2.0)),  # a list is no tuple, as with ==
        ([1.0], [1.0, 2.0]),
        ({"a": 1.0}, {"b": 1.0}),
        (float("nan"), float("nan")),
        (10**400, 1.0),  # past float: compared with ==
        (
            float(6775685320645824322581483068371419745979053216268760300),
            6775685320645824322581483068371419745979053216268760300,
        ),  # an int a float cannot hold (MBPP/67)
        (-1e16, -9999999999999999),
        (complex(-1e16, 0), -9999999999999999),  # a complex is no way around it
        (complex(125411328100, 0), 125411328000),  # nor for an int below 2**53
        (2.0 + 0.5j, 2),
        (1e12 + 100, 10**12),  # within 1e-9 of an int, yet 100 off it
        ("1.0", 1.0),
        (None, 0.0),
        (True, 2.0),
    ],
)
def test_what_differs_beyond_the_last_bits_still_differs(actual, expected):
    assert not _close()(actual, expected)


def test_anything_but_numbers_and_their_containers_is_compared_with_eq():
    close = _close()
    seen: list[object] = []

    class Other:
        def __eq__(self, other: object) -> bool:
            seen.append(other)
            return False

        __hash__ = object.__hash__

    assert not close(Other(), 1.0) and seen == [1.0]
    assert close({1.0, 2.0}, {2.0, 1.0}) and not close({0.1 + 0.2}, {0.3})  # sets: ==
    assert close(True, 1.0) and close(3, 3) and not close(3, 4)
