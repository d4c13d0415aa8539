"""The grading script's processes in a real grading container (`run_checks`)."""

import pytest

from gym._grading import CheckSpec, Export, run_checks

_LOOK = b"""
import os
import stat


def test_the_judge_reads_no_pipe():
    readable = []
    for name in os.listdir("/proc/self/fd"):
        try:
            mode = os.stat(f"/proc/self/fd/{name}").st_mode
            flags = open(f"/proc/self/fdinfo/{name}").read().split("flags:")[1].split()[0]
        except OSError:
            continue  # the listing's own descriptor
        if stat.S_ISFIFO(mode) and int(flags, 8) & os.O_ACCMODE != os.O_WRONLY:
            readable.append(int(name))
    assert readable == []
"""


@pytest.mark.docker
def test_the_checker_holds_no_descriptor_of_the_grading_script(python_image):
    """The checker is forked from the grading script, root (no new interpreter): it must
    still hold only what it is handed. The grading script reads the checker's output and
    events from pipes; a checker holding their read ends could read or drain what the
    grading script is told."""
    spec = CheckSpec(kind="pytest", hidden={"test_look.py": _LOOK}, timeout=60)
    report = run_checks(python_image, {"solution.py": b"x = 1\n"}, Export(), spec)
    assert report.error is None
    assert report.tests == {"grade/tests/test_look.py::test_the_judge_reads_no_pipe": "passed"}


def test_the_bundle_refuses_a_name_that_climbs_out():
    """The grading container writes each bundled file where its name says, as root: an
    exported name climbing out of the workspace must never reach it."""
    from gym._core._errors import UnsafeArchive
    from gym._grading._checks import _bundle

    spec = CheckSpec(kind="pytest", hidden={"test_x.py": b"def test_x():\n    pass\n"})
    export = Export(files={"../grade/runner/boxgym_runner.py": b"print('mine')\n"})
    with pytest.raises(UnsafeArchive, match="climbs out"):
        _bundle({"solution.py": b"x = 1\n"}, export, spec)


_NESTED = b"""
from pkg.sub.mod import VALUE


def test_nested():
    assert VALUE == 42
"""


@pytest.mark.docker
def test_nested_workspace_files_reach_the_grading_container(python_image):
    """Files in folders the pristine task lacks (created by the agent) are unpacked with
    their folders, and the code under test imports them."""
    spec = CheckSpec(kind="pytest", hidden={"test_nested.py": _NESTED}, timeout=60)
    export = Export(
        files={
            "pkg/__init__.py": b"",
            "pkg/sub/__init__.py": b"",
            "pkg/sub/mod.py": b"VALUE = 42\n",
        }
    )
    report = run_checks(python_image, {"solution.py": b"x = 1\n"}, export, spec)
    assert report.error is None
    assert report.tests == {"grade/tests/test_nested.py::test_nested": "passed"}


_DUMPABLE = b"""
import ctypes


def test_the_judge_is_not_dumpable():
    assert ctypes.CDLL(None).prctl(3, 0, 0, 0, 0) == 0  # PR_GET_DUMPABLE
"""


@pytest.mark.docker
def test_the_checker_is_not_dumpable(python_image):
    """The checker makes itself non-dumpable (its /proc entries stay root's): the hidden
    checks run in it, and ask the kernel."""
    spec = CheckSpec(kind="pytest", hidden={"test_dump.py": _DUMPABLE}, timeout=60)
    report = run_checks(python_image, {"solution.py": b"x = 1\n"}, Export(), spec)
    assert report.error is None
    assert report.tests == {"grade/tests/test_dump.py::test_the_judge_is_not_dumpable": "passed"}


_PRISTINE = b"""
def test_pristine():
    assert open("/workspace/tests/test_given.py").read().startswith("def test_given")
"""


@pytest.mark.docker
def test_an_agent_file_where_a_pristine_test_needs_its_folder_is_left_out(python_image):
    """An agent that replaced the visible tests' folder by a file (where the task allows
    it): the pristine tests are restored, and the agent's file, which would shadow their
    folder, is left out. The code's failure stays a verdict, never a grading crash."""
    base = {"solution.py": b"x = 1\n", "tests/test_given.py": b"def test_given():\n    pass\n"}
    export = Export(files={"tests": b"zz", "tests/test_given.py": None})
    spec = CheckSpec(
        kind="pytest",
        hidden={"test_pristine.py": _PRISTINE},
        visible_tests=("tests/test_given.py",),
        timeout=60,
    )
    report = run_checks(python_image, base, export, spec)
    assert report.error is None
    assert report.tests["grade/tests/test_pristine.py::test_pristine"] == "passed"
    assert report.tests["workspace/tests/test_given.py::test_given"] == "passed"
