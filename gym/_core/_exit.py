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

    Non-daemon threads are joined and exit hooks run (containers leave with their link,
    the store is flushed); then the process ends without tearing the interpreter down,
    which can take longer than the whole command on a loaded machine.
    """
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)
