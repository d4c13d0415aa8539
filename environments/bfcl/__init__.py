"""BFCL multi-turn: BFCL v4's multi_turn_base tasks on the tool-API family (README.md)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from environments.toolapi import ToolAPIEnv

__all__ = ["BFCLEnv"]


class BFCLEnv(ToolAPIEnv):
    """The 200 ``multi_turn_base`` tasks of BFCL v4 over BFCL's own Python backends.

    The tasks (seeds/bfcl/) and the backend modules (seeds/bfcl/backend/, with BFCL's
    notice) are
    written by scripts/import_bfcl.py from the pinned bfcl-eval wheel. Everything else
    (the service, turns, the gold-replay grader) is `ToolAPIEnv`'s.
    """

    family: ClassVar[str] = "bfcl"
    splits: ClassVar[dict[str, Literal["training", "held-out"]]] = {
        "train": "training",
        "test": "held-out",
    }

    @classmethod
    def backend_dir(cls) -> Path:
        """BFCL's backend modules: seeds/bfcl/backend/."""
        return cls.seeds_dir() / cls.family / "backend"
