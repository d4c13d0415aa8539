"""One malloc arena for the `gym` command's process (gym/_core/_malloc.py).

Each check runs in a fresh process: the cap holds for arenas made after it, and a thread's
arena is the one it first allocates from. A thread's allocation comes from the main
arena exactly when it lies in the process's ``[heap]`` (the main arena's brk heap; every
other arena is a mapping of its own).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux")
    or not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"),
    reason="glibc's malloc only",
)

PROBE = """
import ctypes, threading

def from_main_arena():
    malloc = ctypes.CDLL(None).malloc
    malloc.argtypes, malloc.restype = [ctypes.c_size_t], ctypes.c_void_p
    got = []
    thread = threading.Thread(target=lambda: got.append(malloc(1000)))
    thread.start()
    thread.join()
    for line in open("/proc/self/maps"):
        if line.split()[-1] == "[heap]":
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            return lo <= got[0] < hi
    return False
"""


def _python(code: str, env: dict[str, str] | None = None) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("MALLOC_ARENA_MAX", "GLIBC_TUNABLES")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE + code],
        capture_output=True,
        text=True,
        check=True,
        env={**clean, **(env or {})},
    )
    return done.stdout.strip()


def test_after_the_cap_a_new_threads_allocations_share_the_main_arena():
    code = "from gym._core._malloc import cap_arenas; print(cap_arenas(), from_main_arena())"
    assert _python(code) == "True True"


def test_importing_gym_and_its_command_line_leaves_malloc_as_it_is():
    """A library user's process keeps glibc's arenas: a new thread gets one of its own."""
    assert _python("import gym, gym._cli; print(from_main_arena())") == "False"


@pytest.mark.parametrize(
    ("argv", "capped"),
    [
        (["env", "list", "--json"], "True"),  # a command caps the arenas as it starts
        (["train", "--help"], "False"),  # gym train keeps them for its tensor threads
    ],
)
def test_the_gym_command_caps_the_arenas_as_it_starts_but_for_train(argv, capped):
    code = (
        "import atexit, sys; from gym._cli import main\n"
        "atexit.register(lambda: print(from_main_arena()))\n"
        f"sys.argv = ['gym', *{argv!r}]; main()"
    )
    assert _python(code).splitlines()[-1] == capped


@pytest.mark.parametrize(
    "env", [{"MALLOC_ARENA_MAX": "4"}, {"GLIBC_TUNABLES": "glibc.malloc.arena_max=4"}]
)
def test_arenas_the_environment_sets_stand(env):
    code = "from gym._core._malloc import cap_arenas; print(cap_arenas(), from_main_arena())"
    assert _python(code, env) == "False False"
