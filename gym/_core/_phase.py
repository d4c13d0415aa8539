"""Phases of an episode, announced to whoever schedules it (a hook per thread).

An environment says when its episode enters a phase (``grading``); a scheduler that
runs episodes in threads installs a callback for its thread with `watch`, and may act on
it: the runner lets the next episode start while this one is graded. Without a watcher
an announcement does nothing.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

__all__ = ["enter", "watch"]

_local = threading.local()


@contextlib.contextmanager
def watch(callback: Callable[[str], None]) -> Iterator[None]:
    """Call ``callback(phase)`` for the phases this thread's episodes enter, while inside."""
    previous = getattr(_local, "callback", None)
    _local.callback = callback
    try:
        yield
    finally:
        _local.callback = previous


def enter(phase: str) -> None:
    """Announce that this thread's episode enters ``phase`` (for example ``grading``)."""
    callback = getattr(_local, "callback", None)
    if callback is not None:
        callback(phase)
