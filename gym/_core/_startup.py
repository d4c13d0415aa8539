"""Importing boxgym without the cyclic garbage collector running.

An import of boxgym allocates some 150,000 objects that live as long as the process
(modules, classes, functions, pydantic and SQLModel schemas) and leaves almost no garbage
in cycles, yet the collector passes over them about 200 times: 13% of the CPU of
importing `gym` with the runner and the store (0.58 -> 0.50 s), which every `gym run`
and training process spends on one core before it starts its first container.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block, if it runs (nested: a no-op).

    Nothing is lost: it resumes at the block's end, however the block ends, and collects
    what the block left at its next threshold.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
