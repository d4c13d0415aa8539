"""No leaks: containers of a killed process are removed, by the reaper or by cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from gym._sandbox import list_boxgym

pytestmark = pytest.mark.docker

GYM = os.path.join(os.path.dirname(sys.executable), "gym")


def owned_by(pid: int) -> list[str]:
    return [c.id for c in list_boxgym() if c.labels["boxgym.owner"].split(":")[1] == str(pid)]


def exit_code(proc: subprocess.Popen[str], timeout: float) -> int:
    """Its exit code; if it is still running after ``timeout`` s, its signal masks and its
    threads' stacks go to the captured stderr (SIGUSR1: see RUN_EPISODE) before the test
    fails."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with open(f"/proc/{proc.pid}/status") as fh:  # pending, blocked, ignored, caught
            print(*(line for line in fh if line.startswith("Sig")), file=sys.stderr, sep="")
        os.kill(proc.pid, signal.SIGUSR1)
        time.sleep(1)
        raise


def kill_9(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


ORPHAN = """
import os, docker, gym._sandbox._engine as engine
c = docker.from_env()
labels = engine.labels("pytest", "orphan", "agent")
ct = c.containers.run(os.environ["IMAGE"], ["sleep", "infinity"], detach=True, labels=labels,
                      network_mode="none", user="65534:65534")
print(ct.id, flush=True)
os._exit(0)  # gone without any cleanup: its container is an orphan
"""


def make_orphan(image: str) -> str:
    made = subprocess.run(
        [sys.executable, "-c", ORPHAN],
        capture_output=True,
        text=True,
        env={**os.environ, "IMAGE": image},
        check=True,
    )
    return made.stdout.strip()


def test_gym_doctor_reap_removes_containers_of_dead_owners(engine, python_image):
    # boxgym's own containers leave with their process (test_runner_stop.py); an orphan
    # lost its owner another way (an older version, a hand-made container). Any boxgym
    # process on this shared engine reaps orphans when it connects, so an orphan reaped
    # by another before `doctor` looked is made again.
    for _ in range(3):
        orphan = make_orphan(python_image)
        done = subprocess.run([GYM, "doctor", "--reap"], capture_output=True, text=True)
        if "reaped" in done.stdout:
            break
    assert "reaped" in done.stdout
    assert not any(c.id == orphan for c in list_boxgym())


def test_kill_9_then_next_start_reaps(episode_process):
    proc = episode_process()
    kill_9(proc)
    subprocess.run([sys.executable, "-c", "import gym._sandbox as s; s.client()"], check=True)
    assert owned_by(proc.pid) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_ctrl_c_of_the_cli_cleans_up_at_once(episode_process, sig):
    proc = episode_process("--cli-signals")
    assert owned_by(proc.pid)
    os.kill(proc.pid, sig)
    assert exit_code(proc, timeout=60) != 0
    deadline = time.monotonic() + 10
    while owned_by(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert owned_by(proc.pid) == []


def test_a_removal_that_meets_no_engine_is_retried_until_it_succeeds(monkeypatch):
    import requests

    from gym._sandbox import _engine

    calls: list[str] = []

    class Api:
        def remove_container(self, container_id: str, force: bool) -> None:
            calls.append(container_id)
            if len(calls) < 3:  # the daemon is restarting
                raise requests.exceptions.ConnectionError("no such file")

    class Client:
        api = Api()

    monkeypatch.setattr(_engine, "client", lambda: Client())
    _engine.remove_container("c0ffee")
    assert _engine.pending_removals() == ["c0ffee"]
    deadline = time.monotonic() + 20
    while _engine.pending_removals() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _engine.pending_removals() == [] and calls == ["c0ffee"] * 3
