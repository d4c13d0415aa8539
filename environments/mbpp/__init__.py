"""MBPP: the 974 problems of Mostly Basic Python Problems as function tasks (see README.md).

The tasks come from ``seeds/mbpp/mbpp.jsonl``, the original file unchanged (CC BY 4.0;
source, licence and citation in ``seeds/mbpp/SOURCE.md``), through the index that
``gym env import`` made from it with ``seeds/mbpp/mapping.toml``. They are graded like
PyFunc: the problem's three asserts run in the trusted grading runner against the
agent's function, called in a separate unprivileged process.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import gym
from environments.pyfunc import PyFuncEnv
from gym.datasets import load_indexed_tasks

__all__ = ["MBPPEnv"]


class MBPPEnv(PyFuncEnv):
    """An MBPP problem: write the function in /workspace/solution.py.

    The workspace holds the function's signature with a body that raises
    NotImplementedError; ``submit`` grades it with the problem's three asserts.
    """

    family: ClassVar[str] = "mbpp"
    splits: ClassVar[dict[str, Literal["training", "held-out"]]] = {
        "prompt": "training",
        "test": "held-out",
        "validation": "held-out",
        "train": "training",
    }

    @classmethod
    def load_tasks(cls) -> list[gym.Task]:
        """The 974 tasks, rebuilt from the dataset and its index (cached per process)."""
        return load_indexed_tasks(cls.seeds_dir() / cls.family, splits=cls.splits)
