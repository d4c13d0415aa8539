"""Gymnasium spaces for text observations and tool-call actions.

Gymnasium's `Text` space rejects spaces, punctuation and newlines, so it cannot hold
real LLM text; these spaces accept any string and still sample deterministically.
"""

from __future__ import annotations

import json
import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import Space

from gym._core._tools import parse_call

__all__ = ["TextSpace", "ToolCallSpace"]

_PRINTABLE = np.array(list(string.printable))


class TextSpace(Space[str]):
    """Any Unicode string up to ``max_length`` characters (tool output, prompts)."""

    def __init__(self, max_length: int = 1 << 20, seed: int | np.random.Generator | None = None):
        self.max_length = max_length
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Text cannot be flattened into an array."""
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random printable string of up to 64 characters."""
        length = int(self.np_random.integers(1, 65))
        return "".join(self.np_random.choice(_PRINTABLE, size=length))

    def contains(self, x: Any) -> bool:
        """Whether x is a string no longer than ``max_length``."""
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"TextSpace(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextSpace) and other.max_length == self.max_length


class ToolCallSpace(Space[dict[str, Any]]):
    """OpenAI-style tool calls ``{"name": str, "arguments": dict | JSON str}`` for given tools.

    `contains` accepts what models produce: arguments as a dict or as JSON text, and the
    whole call as JSON text. `sample` draws from ``samples``, calls without side
    effects that the environment supplies.
    """

    def __init__(
        self,
        names: Sequence[str],
        samples: Sequence[dict[str, Any]] = (),
        seed: int | np.random.Generator | None = None,
    ):
        self.names = tuple(names)
        self.samples = [dict(s) for s in samples]
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Tool calls cannot be flattened into an array."""
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        """One of the side-effect-free sample calls, chosen with the space's RNG."""
        if not self.samples:
            raise ValueError("this ToolCallSpace has no sample calls")
        call = self.samples[int(self.np_random.integers(len(self.samples)))]
        return dict(json.loads(json.dumps(call)))

    def contains(self, x: Any) -> bool:
        """Whether x parses as a call to one of this space's tools."""
        try:
            return parse_call(x).name in self.names
        except ValueError:
            return False

    def __repr__(self) -> str:
        return f"ToolCallSpace({', '.join(self.names)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolCallSpace) and other.names == self.names
