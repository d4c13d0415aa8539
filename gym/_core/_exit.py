"""Leaving a process the way `gym` commands leave: exit hooks run, no interpreter teardown."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import NoReturn

__all__ = ["leave"]


def leave(code: object) -> NoReturn:
    """Exit with ``code`` as `sys.exit` would, skipping the interpreter's teardown.

    What a normal exit does before its teardown is done, in its order: threading's own
    shutdown (its exit hooks, which let an idle `ThreadPoolExecutor`'s workers go, then a
    join of every non-daemon thread), then the exit hooks (containers leave with their
    link, the store is flushed). Then the process ends without tearing the interpreter
    down, which can take longer than the whole command on a loaded machine.
    """
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    _join_threads()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


def _join_threads() -> None:
    """Join the non-daemon threads as the interpreter's exit does.

    From the main thread that is `threading._shutdown` (the hooks registered with
    ``threading._register_atexit`` first: without them an executor nobody shut down keeps
    its workers waiting for work, and the join waits forever). From another thread, the
    others are joined.
    """
    if threading.current_thread() is threading.main_thread():
        threading._shutdown()  # type: ignore[attr-defined]
        return
    me, main = threading.current_thread(), threading.main_thread()
    for thread in threading.enumerate():
        if thread not in (me, main) and not thread.daemon:
            thread.join()
