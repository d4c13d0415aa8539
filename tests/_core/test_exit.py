"""Leaving a process as gym commands do (gym/_core/_exit.py)."""

from __future__ import annotations

import subprocess
import sys


def test_leaving_joins_threads_runs_atexit_flushes_and_keeps_the_exit_code():
    """Commands skip the interpreter's teardown, never what a normal exit does before it."""
    script = (
        "import atexit, sys, threading, time\n"
        "from gym._core._exit import leave\n"
        "atexit.register(lambda: sys.stdout.write('atexit\\n'))\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), sys.stdout.write('thread\\n'))).start()\n"
        "sys.stdout.write('buffered')\n"
        "leave(3)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 3
    assert out.stdout == "bufferedthread\natexit\n"
    text = subprocess.run(
        [sys.executable, "-c", "from gym._core._exit import leave; leave('no such run')"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (text.returncode, text.stderr) == (1, "no such run\n")


def test_leaving_lets_an_executor_nobody_shut_down_go_as_a_normal_exit_does():
    """An idle ThreadPoolExecutor's workers wait for work until threading's exit hook."""
    script = (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "from gym._core._exit import leave\n"
        "pool = ThreadPoolExecutor(2)\n"
        "print(pool.submit(lambda: 'done').result(), flush=True)\n"
        "leave(0)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout) == (0, "done\n")
