"""The engine's record of a container's end (gym/_sandbox/_oom.py), from its events.

Unit tests on the events as the engine sends them; a keeper killed at a real container's
memory limit is the red-team row ``infra.keeper_killed_at_memory_limit`` (and its
weakened test) and tests/_envs/test_env.py.
"""

from __future__ import annotations

from unittest import mock

import pytest

from gym._sandbox import _oom

SECOND = 1_000_000_000


def _event(action: str, container: str, at: int, code: str = "") -> dict:
    attributes = {"exitCode": code} if code else {}
    return {"Action": action, "Actor": {"ID": container, "Attributes": attributes}, "timeNano": at}


@pytest.fixture
def listener():
    with mock.patch.object(_oom._Listener, "_listen", lambda self: None):
        yield _oom._Listener()


@pytest.mark.parametrize(
    ("events", "killed"),
    [
        ([("oom", 0, ""), ("die", 1, "137")], True),  # the kill, then its end by SIGKILL
        ([("oom", 0, ""), ("oom", 2, ""), ("die", 3, "137")], True),
        ([("die", 1, "137")], False),  # SIGKILL from outside: a stop, a person
        ([("oom", 0, ""), ("die", 1, "1")], False),  # it ended on its own after a kill
        ([("oom", 0, ""), ("die", 60, "137")], False),  # long after an agent's process was
    ],
)
def test_a_container_is_memory_killed_only_when_its_end_follows_a_kill(listener, events, killed):
    for action, second, code in events:
        listener._record(_event(action, "c1", second * SECOND // 10, code))
    assert listener.memory_killed("c1", wait=0.0) is killed
    assert listener.memory_killed("c2", wait=0.0) is False  # another container: no record


def test_the_answer_waits_for_the_engines_report_of_the_end(listener):
    listener._record(_event("oom", "c1", 0))
    assert listener.memory_killed("c1", wait=0.05) is False  # no end reported yet
    listener._record(_event("die", "c1", SECOND // 10, "137"))
    assert listener.memory_killed("c1", wait=0.05) is True


def test_only_the_last_few_thousand_containers_are_kept(listener):
    for i in range(_oom._KEPT + 10):
        listener._record(_event("die", f"c{i}", i, "0"))
    assert len(listener._died) == _oom._KEPT and "c0" not in listener._died


def test_without_a_listener_nothing_is_known():
    with mock.patch.object(_oom, "_listener", None):
        assert _oom.memory_killed("c1", wait=0.0) is False


def test_a_forked_child_starts_a_listener_of_its_own():
    """The parent's listener thread does not survive a fork: the child's first keeper
    container must start one, not wait on a listener that no longer runs."""
    import os

    with mock.patch.object(_oom, "_listener", object()):
        pid = os.fork()
        if pid == 0:  # the child: nothing of the parent's listener is left
            os._exit(0 if _oom._listener is None else 1)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
