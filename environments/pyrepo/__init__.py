"""PyRepo: fix a bug or add a feature in a small Python project (see README.md)."""

from typing import ClassVar

import gym

__all__ = ["PyRepoEnv"]


class PyRepoEnv(gym.CodeEnv):
    """A small Python project in /workspace with an issue to resolve.

    Tools: ``bash``, ``read_file``, ``write_file``, ``submit``. Graded in a fresh
    container by the task's hidden tests plus its pristine visible tests; changes
    outside the task's allowed paths and tampering with tests are flagged.
    """

    family: ClassVar[str] = "pyrepo"
    image: ClassVar[str] = "python"
