"""Background removals (gym/_sandbox/_link.py): their threads start with the first one."""

from __future__ import annotations

import subprocess
import sys
import threading

from gym._sandbox._link import _Remover


def _removers() -> int:
    return sum(t.name == "gym-remove" for t in threading.enumerate())


def test_the_removal_threads_start_with_the_first_removal():
    before = _removers()
    remover = _Remover(workers=3)
    assert _removers() == before
    done = threading.Event()
    remover.submit(done.set)
    assert done.wait(10)
    remover.submit(lambda: None)
    assert _removers() == before + 3  # once


def test_importing_gym_and_its_command_line_starts_no_thread():
    code = "import threading, gym, gym._cli, gym._store; print(threading.active_count())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "1"
