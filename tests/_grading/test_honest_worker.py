"""A correct solution is never failed by the worker's own stand-ins and limits.

The worker is the code's process: its caps are its own, and they sit strictly inside
the checker's, so that only code tampering with the worker meets the checker's limits.
Each test here failed a correct solution before (a false-fail hunt over the shipped
environments' reference solutions).
"""

import pytest

from gym._grading import CheckSpec, Export, run_checks

_STREAMS = b"""
import faulthandler
import io
import subprocess
import sys

sys.stdout.reconfigure(encoding="utf-8")  # what scripts do for Windows consoles
ENCODING = sys.stdout.encoding.lower()
faulthandler.enable()  # a real descriptor: sys.stderr.fileno()
READ = sys.stdin.buffer.readline  # what competitive code binds at import
WIDE = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", write_through=True)


def shout(word):
    print(word, "\\u00e9", sys.stdout.isatty())
    WIDE.write("wide\\n")
    subprocess.run(["/bin/echo", "child"], stdout=sys.stdout, check=True)
    return word.upper(), ENCODING, READ()


def latin(word):
    sys.stdout.reconfigure(encoding="latin-1", errors="replace")
    print(word + "\\u20ac")
    sys.stdout.reconfigure(encoding="utf-8", errors="strict")
    return word
"""

_ASK_STREAMS = b"""
from solution import latin, shout


def test_shout(capsys):
    assert shout("hi") == ("HI", "utf-8", b"")
    printed = capsys.readouterr().out
    assert "hi \\u00e9 False\\n" in printed and "wide\\n" in printed, printed


def test_latin(capsys):
    assert latin("x") == "x"
    assert capsys.readouterr().out == "x?\\n"  # the encoding asked for, honoured
"""


@pytest.mark.docker
def test_code_using_its_standard_streams_as_real_ones_passes(python_image):
    """The worker's stand-ins for ``sys.stdout``/``sys.stderr`` act as a redirected real
    stream does: an encoding, ``reconfigure``, ``buffer``, ``isatty`` and a descriptor
    (``faulthandler.enable()``, a subprocess writing to it). Before, each of these at
    import failed every check (``solution failed to load``)."""
    spec = CheckSpec(kind="pytest", hidden={"test_streams.py": _ASK_STREAMS}, timeout=60)
    report = run_checks(python_image, {"solution.py": _STREAMS}, Export(), spec)
    assert report.error is None and not report.findings, report.log
    assert set(report.tests.values()) == {"passed"}, report.log


_FAN_OUT = b"""
import threading


def double(n):
    return 2 * n


def fan_out(count):
    results, ready = [None] * count, threading.Barrier(count)

    def call(i):
        ready.wait()  # every thread alive at once
        results[i] = double(i)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results
"""

_ASK_FAN_OUT = b"""
import pytest

from solution import fan_out


@pytest.mark.parametrize("count", [64, 90])
def test_fan_out(count):
    assert fan_out(count) == [2 * i for i in range(count)]
"""


@pytest.mark.docker
def test_code_calling_its_entry_from_dozens_of_threads_passes(python_image):
    """90 threads of the code alive at once (its process limit is 96): before, glibc's
    64 MiB arena per thread and 8 MiB stacks filled the worker's 768 MiB address space
    at the 13th (``can't start new thread``), and a default ThreadPoolExecutor on a
    12-CPU host failed."""
    spec = CheckSpec(kind="pytest", hidden={"test_fan_out.py": _ASK_FAN_OUT}, timeout=90)
    report = run_checks(python_image, {"solution.py": _FAN_OUT}, Export(), spec)
    assert report.error is None and not report.findings, report.log
    assert set(report.tests.values()) == {"passed"} and len(report.tests) == 2, report.log


_CHATTY = b"""
import sys


def both(n):
    sys.stdout.write("\\u00e9" * n)
    sys.stderr.write("\\U0001f600" * n)
    return n


def noisy(n):
    print("\\u00e9" * 6000)
    return n + 1
"""

_ASK_CHATTY = b"""
from solution import both, noisy


def test_one_call_printing_megabytes_of_escaped_text():
    assert both(700 << 10) == 700 << 10


def test_a_long_check_printing_on_every_call():
    assert [noisy(n) for n in range(1999)] == list(range(1, 2000))


def test_the_next_test_prints_again(capsys):
    assert noisy(1) == 2
    assert capsys.readouterr().out == "\\u00e9" * 6000 + "\\n"
"""


@pytest.mark.docker
def test_code_printing_a_lot_is_cut_by_the_worker_never_failed_by_the_checker(python_image):
    """The checker's limits count bytes of JSON (6 per ``\u00e9``, 12 per emoji): 700K
    such characters in one call, or 6000 on each of 1,999 calls of one test, passed the
    worker's 1M-character cap and failed the test as ``resource_limit``. The worker now
    counts the same bytes, per message and per test (renewed when the checker says a
    test began): the output is cut and marked, the answers are graded."""
    spec = CheckSpec(kind="pytest", hidden={"test_chatty.py": _ASK_CHATTY}, timeout=120)
    report = run_checks(python_image, {"solution.py": _CHATTY}, Export(), spec)
    assert report.error is None and not report.findings, report.log
    assert set(report.tests.values()) == {"passed"} and len(report.tests) == 3, report.log
