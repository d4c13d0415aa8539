"""MBPP: the 974 problems of Mostly Basic Python Problems as function tasks (see README.md).

The tasks come from ``seeds/mbpp/mbpp.jsonl``, the original file unchanged (CC BY 4.0;
source, licence and citation in ``seeds/mbpp/SOURCE.md``), through the index that
``gym env import`` made from it with ``seeds/mbpp/mapping.toml``. They are graded like
PyFunc: the problem's three asserts run in the trusted grading script against the
agent's function, called in a separate unprivileged process.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import gym
from gym.datasets import load_indexed_tasks

__all__ = ["PANEL_EXEMPT", "MBPPEnv"]

_MBPP_816 = (
    "the reference solution returns () for every input, as the problem asks (clear the "
    "values of the given tuple): returning () is a correct solution, and no added check "
    "can tell it apart"
)
_MBPP_899 = (
    "the reference solution returns True for every input (its loop compares arr[i] with "
    "itself, so it never returns False) and upstream's three asserts all expect True: by "
    "the data's own standard returning True is correct, and a check computed from the "
    "reference would expect True too"
)
PANEL_EXEMPT: dict[str, dict[str, str]] = {
    "MBPP/816": {"echo": _MBPP_816},
    "MBPP/899": {"echo": _MBPP_899, "constant_true": _MBPP_899},
}
"""Task id -> panel policies that pass it and why that is no defect of the checks
(README.md, "Validation"): the validation panel reports them as exempt."""


class MBPPEnv(gym.CodeEnv):
    """An MBPP problem: write the function in /workspace/solution.py.

    The workspace holds the function's signature with a body that raises
    NotImplementedError; ``submit`` grades it with the problem's three asserts.
    """

    family: ClassVar[str] = "mbpp"
    image: ClassVar[str] = "python"
    splits: ClassVar[dict[str, Literal["training", "held-out"]]] = {
        "prompt": "training",
        "test": "held-out",
        "validation": "held-out",
        "train": "training",
    }

    @classmethod
    def load_tasks(cls) -> list[gym.Task]:
        """The 974 tasks, rebuilt from the dataset and its index (cached per process).

        The tasks of `PANEL_EXEMPT` carry their exemptions as ``panel_exempt``.
        """
        tasks = load_indexed_tasks(cls.seeds_dir() / cls.family, splits=cls.splits)
        for n, task in enumerate(tasks):
            if task.id in PANEL_EXEMPT:
                data = {**task.data, "panel_exempt": PANEL_EXEMPT[task.id]}
                tasks[n] = task.model_copy(update={"data": data})
        return tasks
