"""Whose was a kill for want of memory in a grading: the kernel's counters decide.

`boxgym_memory` (shipped beside the grading scripts, stdlib only) reads them; the code
under test can raise them only by filling its own container, which is then its own.
"""

import importlib.util

import pytest

from gym._grading._checks import RUNNER_PATH

spec = importlib.util.spec_from_file_location(
    "boxgym_memory", RUNNER_PATH.parent / "boxgym_memory.py"
)
memory = importlib.util.module_from_spec(spec)
spec.loader.exec_module(memory)

LIMIT = 1 << 30


@pytest.fixture
def cgroup(tmp_path, monkeypatch):
    """The container's cgroup files, as the test writes them (v2 events, v1 counters)."""
    files = {
        name: tmp_path / name
        for name in ("events", "oom_control", "peak", "limit", "sw_peak", "sw_limit")
    }
    monkeypatch.setattr(
        memory,
        "_OOM_KILLS",
        ((str(files["events"]), "oom_kill"), (str(files["oom_control"]), "oom_kill")),
    )
    monkeypatch.setattr(memory, "_LIMIT_OOMS", ((str(files["events"]), "oom"),))
    monkeypatch.setattr(
        memory,
        "_PEAKS",
        (
            (str(files["peak"]), str(files["limit"])),
            (str(files["sw_peak"]), str(files["sw_limit"])),
        ),
    )
    monkeypatch.setattr(memory, "_LIMITS", (str(files["limit"]),))
    return files


def _write(files, **values):
    for name, value in values.items():
        files[name].write_text(str(value))


def test_v2_an_oom_at_the_containers_own_limit_is_the_containers(cgroup):
    _write(cgroup, events="low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n")
    kills = memory.Kills()
    assert kills.since() == 0 and kills.by_the_host() is None
    _write(cgroup, events="low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\n")
    assert kills.since() == 1 and kills.own_limit_reached() is True
    assert kills.by_the_host() is None


def test_v2_a_kill_by_the_hosts_want_of_memory_is_the_hosts(cgroup):
    _write(cgroup, events="oom 0\noom_kill 0\n")
    kills = memory.Kills()
    _write(cgroup, events="oom 0\noom_kill 1\n")  # killed here, by an OOM above
    assert kills.own_limit_reached() is False
    assert "the host, or a cgroup above the container" in kills.by_the_host()


def test_v1_the_peak_says_whether_the_limit_was_reached(cgroup):
    _write(cgroup, oom_control="oom_kill 0\n", peak=64 << 20, limit=LIMIT)
    _write(cgroup, sw_peak=64 << 20, sw_limit=LIMIT)
    kills = memory.Kills()
    _write(cgroup, oom_control="oom_kill 1\n", peak=LIMIT, sw_peak=LIMIT)
    assert kills.by_the_host() is None
    _write(cgroup, peak=LIMIT - (4 << 20), sw_peak=LIMIT - (4 << 20))  # a batch short
    assert kills.by_the_host() is None
    _write(cgroup, peak=168 << 20, sw_peak=168 << 20)  # the host ran out, far below
    said = kills.by_the_host()
    assert said.startswith("the kernel killed 1 process(es)") and "peak 176160768" in said


def test_v1_with_swap_the_limit_of_memory_and_swap_together_counts(cgroup):
    """Pages swapped out: memory and swap reach their limit with memory below its own."""
    _write(cgroup, oom_control="oom_kill 0\n", peak=LIMIT - (300 << 20), limit=LIMIT)
    _write(cgroup, sw_peak=LIMIT, sw_limit=LIMIT)
    kills = memory.Kills()
    _write(cgroup, oom_control="oom_kill 1\n")
    assert kills.own_limit_reached() is True and kills.by_the_host() is None


def test_a_kill_with_no_counter_to_tell_whose_stays_the_containers(cgroup):
    _write(cgroup, oom_control="oom_kill 0\n")
    kills = memory.Kills()
    _write(cgroup, oom_control="oom_kill 1\n")
    assert kills.own_limit_reached() is None and kills.by_the_host() is None
