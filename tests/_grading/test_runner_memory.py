"""Whose was a kill for want of memory in a grading: the kernel's counters decide.

The runner (imported from its file, stdlib only) reads them; the code under test can
raise them only by filling its own container, which is then rightly its own.
"""

import importlib.util

import pytest

from gym._grading._checks import RUNNER_PATH

spec = importlib.util.spec_from_file_location("boxgym_runner", RUNNER_PATH)
runner = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runner)

LIMIT = 1 << 30


@pytest.fixture
def cgroup(tmp_path, monkeypatch):
    """The container's cgroup files, as the test writes them (v2 events, v1 peaks)."""
    events = tmp_path / "memory.events"
    v1 = {name: tmp_path / name for name in ("peak", "limit", "sw_peak", "sw_limit")}
    monkeypatch.setattr(runner, "_LIMIT_OOMS", ((str(events), "oom"),))
    monkeypatch.setattr(
        runner,
        "_PEAKS",
        ((str(v1["peak"]), str(v1["limit"])), (str(v1["sw_peak"]), str(v1["sw_limit"]))),
    )
    return events, v1


def test_v2_an_oom_at_the_containers_own_limit_is_counted_there(cgroup):
    events, _ = cgroup
    events.write_text("low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n")
    before = runner.limit_ooms()
    assert runner.own_limit_reached(before) is False  # nothing since
    events.write_text("low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\n")
    assert runner.own_limit_reached(before) is True


def test_v2_a_kill_by_the_hosts_want_of_memory_leaves_the_own_count(cgroup):
    events, _ = cgroup
    events.write_text("oom 0\noom_kill 0\n")
    before = runner.limit_ooms()
    events.write_text("oom 0\noom_kill 1\n")  # killed here, by an OOM above
    assert runner.own_limit_reached(before) is False


def _write(v1, **values):
    for name, value in values.items():
        v1[name].write_text(str(value))


def test_v1_the_peak_says_whether_the_limit_was_reached(cgroup):
    _, v1 = cgroup  # no v2 events file: v1
    _write(v1, peak=LIMIT, limit=LIMIT, sw_peak=LIMIT, sw_limit=LIMIT)
    assert runner.own_limit_reached(None) is True
    _write(v1, peak=LIMIT - (4 << 20), sw_peak=LIMIT - (4 << 20))  # a batch or huge page short
    assert runner.own_limit_reached(None) is True
    _write(v1, peak=168 << 20, sw_peak=168 << 20)  # the host ran out, the container far below
    assert runner.own_limit_reached(None) is False


def test_v1_with_swap_the_limit_of_memory_and_swap_together_counts(cgroup):
    """Pages swapped out: memory and swap reach their limit with memory below its own."""
    _, v1 = cgroup
    _write(v1, peak=LIMIT - (300 << 20), limit=LIMIT, sw_peak=LIMIT, sw_limit=LIMIT)
    assert runner.own_limit_reached(None) is True


def test_unknown_when_neither_counter_is_there(cgroup):
    assert runner.own_limit_reached(None) is None
