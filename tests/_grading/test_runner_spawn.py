"""The grading script's spawn (gym/_grading/runner/boxgym_runner.py): whose failure is whose.

A child that fails before it runs what it was started for (its limits, its uid, its
descriptors) is the grading's fault and raises in the grading script (an error of the
report: infra_error); exiting after it started is the child's own doing.
"""

from __future__ import annotations

import os
import sys

import pytest

from gym._grading._checks import RUNNER_PATH

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="spawning as another uid needs root")


@pytest.fixture(scope="module")
def runner():
    sys.path.insert(0, str(RUNNER_PATH.parent))
    try:
        import boxgym_runner
    finally:
        sys.path.remove(str(RUNNER_PATH.parent))
    return boxgym_runner


def test_a_child_that_fails_before_it_runs_is_the_gradings_fault(runner):
    def refuse() -> None:
        raise OSError("setrlimit refused")

    with pytest.raises(RuntimeError, match="setrlimit refused"):
        runner.spawn(["/bin/true"], 65534, cwd="/", env={}, setup=refuse)


def test_a_child_left_root_is_the_gradings_fault(runner):
    with pytest.raises(RuntimeError, match="still root"):
        runner.spawn(["/bin/true"], 0, cwd="/", env={})


def test_a_child_that_ran_and_exited_is_its_own(runner):
    pid = runner.spawn(["/bin/sh", "-c", "exit 98"], 65534, cwd="/", env={})
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 98
