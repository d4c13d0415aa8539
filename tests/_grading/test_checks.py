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


_WORKER_SELF = b'''
import os
import resource
import stat
import sys


def describe():
    """What the worker process is: asked of it by the hidden test, answered in plain values."""
    fds = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            mode = os.stat(f"/proc/self/fd/{name}").st_mode
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue  # the listing's own descriptor
        fds[int(name)] = "socket" if stat.S_ISSOCK(mode) else target
    return {
        "uids": list(os.getresuid()) + list(os.getresgid()),
        "groups": os.getgroups(),
        "ppid": os.getppid(),
        "sid_is_pid": os.getsid(0) == os.getpid(),
        "fds": fds,
        "nproc": resource.getrlimit(resource.RLIMIT_NPROC)[0],
        "address_space": resource.getrlimit(resource.RLIMIT_AS)[0],
        "core": resource.getrlimit(resource.RLIMIT_CORE)[0],
        "oom": open("/proc/self/oom_score_adj").read().strip(),
        "nice": os.nice(0),
        "runner_on_path": any("runner" in p for p in sys.path),
        "site_on_path": any(p.endswith("-packages") for p in sys.path),
        "env": sorted(os.environ),
    }


def holds(head, tail):
    """Where the worker's memory holds head + tail, but for this function's own copies."""
    import ctypes

    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: /proc/self/mem its own again
    needle = head.encode() + tail.encode()  # never the whole as text
    buffer = bytearray(1 << 20)  # read into, searched in place: no other copy is made
    mine = [(id(needle) + bytes.__basicsize__ - 1, len(needle))]
    mine.append((ctypes.addressof(ctypes.c_char.from_buffer(buffer)), len(buffer)))
    found = []
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
        regions = [line.split()[:2] for line in maps]
        for span, perms in regions:
            if not perms.startswith("r"):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            for at in range(start, end, len(buffer)):
                try:
                    mem.seek(at)
                    n = mem.readinto(buffer)
                except OSError:
                    break
                hit = buffer.find(needle, 0, n)
                while hit >= 0:
                    if not any(a <= at + hit < a + size for a, size in mine):
                        found.append(at + hit)
                    hit = buffer.find(needle, hit + 1, n)
    return found
'''

_ASK_WORKER = b"""
import json

from solution import describe, holds

TOKEN = "boxgym-canary-7f3a9c2e41d8b6"  # this file's text: in the bundle, never sent whole


def test_nothing_of_the_bundle():
    assert holds(TOKEN[:13], TOKEN[13:]) == []


def test_worker():
    seen = describe()
    facts = json.dumps(seen, sort_keys=True)
    assert 0 not in seen["uids"] and len(set(seen["uids"])) == 1, facts
    assert seen["groups"] in ([], seen["uids"][:1]), facts
    assert seen["ppid"] == 1 and seen["sid_is_pid"], facts
    assert seen["fds"] == {0: "/dev/null", 1: "/dev/null", 2: "/dev/null", 3: "socket"}, facts
    assert (seen["nproc"], seen["address_space"], seen["core"]) == (96, 768 << 20, 0), facts
    assert (seen["oom"], seen["nice"]) == ("1000", 19), facts
    assert not seen["runner_on_path"] and seen["site_on_path"], facts
    assert "BOXGYM_WORKER" in seen["env"] and "HOME" in seen["env"], facts
"""


@pytest.mark.docker
def test_the_worker_is_a_fresh_process_of_its_own(python_image):
    """The worker, the one process that imports the code under test, is what the grading
    promises: another uid with no groups, a session of its own, reaped by the grading
    script (pid 1), only /dev/null and its channel open, the worker's limits, OOM score
    and priority, the site folders but not the runner's on its path, the scrubbed
    environment; and its memory holds nothing of the grading's input (a token of the
    hidden test's text, never sent to it whole). It asks the worker itself. These are what
    any other way of starting workers must keep: a worker forked from a template that had
    read the bundle failed the memory check."""
    spec = CheckSpec(kind="pytest", hidden={"test_ask.py": _ASK_WORKER}, timeout=60)
    report = run_checks(python_image, {"solution.py": _WORKER_SELF}, Export(), spec)
    assert report.error is None
    assert report.tests == {
        "grade/tests/test_ask.py::test_nothing_of_the_bundle": "passed",
        "grade/tests/test_ask.py::test_worker": "passed",
    }, report.log


_READ_BACK = b"""
from solution import save


def test_read_back(tmp_path):
    path = tmp_path / "out.txt"
    save(str(path))
    assert path.read_bytes() == b"ok"
"""


@pytest.mark.docker
@pytest.mark.parametrize(
    ("code", "outcome"),
    [
        (b"def save(path):\n    open(path, 'wb').write(b'ok')\n", "passed"),
        (b"import os\n\n\ndef save(path):\n    os.symlink('/dev/zero', path)\n", "failed"),
        (
            b"import os\n\n\ndef save(path):\n    os.truncate(open(path, 'wb').fileno(), 1 << 40)\n",
            "failed",
        ),
    ],
    ids=["written", "a link to an endless device", "a sparse terabyte"],
)
def test_a_check_reading_back_what_the_code_made_fails_its_test_at_worst(
    python_image, code, outcome
):
    """A test that reads back a file the code wrote reads whatever the code left there:
    the checker's own memory limit makes an endless read that test's MemoryError (its
    fail), never the checker killed at the container's limit (a grading without report)."""
    spec = CheckSpec(kind="pytest", hidden={"test_read_back.py": _READ_BACK}, timeout=60)
    report = run_checks(python_image, {"solution.py": code}, Export(), spec)
    assert report.error is None and report.finished
    assert report.tests == {"grade/tests/test_read_back.py::test_read_back": outcome}


_TEXTS = b"""
from solution import Endless, NoText


def test_the_text_kept_is_cut():
    text = str(Endless())
    assert text.endswith("... [cut]") and len(text) < 70_000


def test_an_answer_that_is_no_text_still_gives_one():
    assert "could not be read" in str(NoText())
"""

_TEXTS_CODE = b"""
class Endless(Exception):
    def __str__(self):
        return "\\U0001f600" * 200_000


class NoText(Exception):
    def __str__(self):
        return 12345
"""


@pytest.mark.docker
def test_an_exception_made_by_the_code_is_asked_its_text_once_and_kept_cut(python_image):
    """pytest keeps every failed test's report to the session's end, exception texts
    included: the text of an exception the code made (not raised, so it came without
    one) is kept at most `MAX_SAID` like any other, and asking for it never raises."""
    spec = CheckSpec(kind="pytest", hidden={"test_texts.py": _TEXTS}, timeout=60)
    report = run_checks(python_image, {"solution.py": _TEXTS_CODE}, Export(), spec)
    assert report.error is None
    assert set(report.tests.values()) == {"passed"}, report.tests


_THREADS = b"""
import threading

from solution import double


def test_many_threads_call_the_code():
    results, ready = [], threading.Barrier(64)

    def call(n):
        ready.wait()
        results.append(double(n))

    threads = [threading.Thread(target=call, args=(n,)) for n in range(64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [2 * n for n in range(64)]
"""


@pytest.mark.docker
def test_a_check_starting_many_threads_is_not_refused_by_the_checkers_memory_limit(python_image):
    """The checker's memory limit counts each thread's stack: 64 threads alive at once in
    a hidden test (of a correct solution) must fit, not fail on `can't start new thread`."""
    spec = CheckSpec(kind="pytest", hidden={"test_threads.py": _THREADS}, timeout=60)
    report = run_checks(
        python_image, {"solution.py": b"def double(n):\n    return 2 * n\n"}, Export(), spec
    )
    assert report.error is None and report.finished
    assert report.tests == {
        "grade/tests/test_threads.py::test_many_threads_call_the_code": "passed"
    }


_CALLBACKS = b"""
from solution import parallel_map


def test_the_code_calls_back_from_its_threads():
    assert parallel_map(lambda n: 2 * n, range(200)) == [2 * n for n in range(200)]
"""

_PARALLEL_MAP = b"""
from concurrent.futures import ThreadPoolExecutor


def parallel_map(fn, items):
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(fn, items))
"""


@pytest.mark.docker
def test_code_calling_a_checks_function_from_its_own_threads_is_graded_on_its_answer(
    python_image,
):
    """A correct solution calling a function the check handed it from eight threads at
    once: the requests take turns on the channel, none is read as a forged answer."""
    spec = CheckSpec(kind="pytest", hidden={"test_callbacks.py": _CALLBACKS}, timeout=60)
    report = run_checks(python_image, {"solution.py": _PARALLEL_MAP}, Export(), spec)
    assert report.error is None and report.finished and not report.findings
    assert report.tests == {
        "grade/tests/test_callbacks.py::test_the_code_calls_back_from_its_threads": "passed"
    }


def test_the_bundle_makes_the_folders_the_agent_made_where_no_file_stands():
    """A made folder travels as a name with no content (None); one where a written file
    stands, or under one, is left out (a pristine visible test restored over it)."""
    import marshal

    from gym._grading._checks import _bundle

    base = {"solution.py": b"x = 1\n", "tests/test_given.py": b"def test_given():\n    pass\n"}
    export = Export(
        files={"tests/test_given.py": None},
        folders=["pkg", "pkg/empty", "tests/test_given.py", "tests/test_given.py/in"],
    )
    spec = CheckSpec(kind="pytest", visible_tests=("tests/test_given.py",))
    bundle = marshal.loads(_bundle(base, export, spec))
    made = {name for name, data in bundle.items() if data is None}
    assert made == {"workspace/pkg", "workspace/pkg/empty"}
    assert bundle["workspace/tests/test_given.py"] == base["tests/test_given.py"]


def test_an_export_stored_before_folders_were_listed_reads_as_none():
    stored = (
        '{"workspace": "/workspace", "files": {"a.py": "eD0xCg=="}, "changes": [], "links": []}'
    )
    export = Export.model_validate_json(stored)
    assert export.folders == [] and export.files == {"a.py": b"x=1\n"}


_FOLDERS = b"""
import os
import stat


def test_folders():
    for path in ("/workspace/pkg", "/workspace/pkg/empty"):
        info = os.stat(path, follow_symlinks=False)
        assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o755
        assert (info.st_uid, info.st_gid) == (0, 0)
    assert os.listdir("/workspace/pkg/empty") == []
"""


@pytest.mark.docker
def test_an_empty_folder_the_agent_made_is_made_in_the_grading_container(python_image):
    spec = CheckSpec(kind="pytest", hidden={"test_folders.py": _FOLDERS}, timeout=60)
    export = Export(folders=["pkg", "pkg/empty"])
    report = run_checks(python_image, {"solution.py": b"x = 1\n"}, export, spec)
    assert report.error is None
    assert report.tests == {"grade/tests/test_folders.py::test_folders": "passed"}
