"""PyFunc: write one Python function from a short specification (see README.md)."""

from typing import ClassVar

import gym

__all__ = ["PyFuncEnv"]


class PyFuncEnv(gym.CodeEnv):
    """A function to write in /workspace/solution.py, checked by hidden calls.

    The hidden checks run in the trusted grading script; the function under test runs
    in a separate unprivileged process and only primitive values cross between them.
    """

    family: ClassVar[str] = "pyfunc"
    image: ClassVar[str] = "python"
