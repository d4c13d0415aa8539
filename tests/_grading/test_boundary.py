"""The checker-worker boundary, run locally: a real worker process, no container.

The worker is started the way the runner starts it (``python -I`` with one socket on
a file descriptor), as the same uid here; uids, limits and file permissions are the
container's business and are tested on the real engine (test_attacks, test_infra).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter, OrderedDict, defaultdict
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from gym._grading._checks import RUNNER_PATH

RUNNER_DIR = RUNNER_PATH.parent


def _load(name: str):
    if name in sys.modules:
        return sys.modules[name]
    sys.path.insert(0, str(RUNNER_DIR))
    try:
        spec = importlib.util.spec_from_file_location(name, RUNNER_DIR / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(RUNNER_DIR))
    return module


wire = _load("boxgym_wire")
checker = _load("boxgym_checker")

PROJECT = """
import os, sys, time
from dataclasses import dataclass


class ParseError(ValueError):
    def __init__(self, message, line):
        super().__init__(f"line {line}: {message}")
        self.line = line


@dataclass(frozen=True)
class Point:
    x: int
    y: int

    def norm1(self):
        return abs(self.x) + abs(self.y)


class Base:
    pass


class Derived(Base):
    pass


class Liar:
    __eq__ = lambda self, other: True
    __hash__ = object.__hash__


class FirstCallLiar:
    def __eq__(self, other):
        self.asked = getattr(self, "asked", 0) + 1
        return self.asked == 1
    __hash__ = object.__hash__


class DelayedTruth:
    # false the first time its truth is asked, true after
    def __bool__(self):
        self.asked = getattr(self, "asked", 0) + 1
        return self.asked > 1


class DelayedLiar:
    def __eq__(self, other):
        return DelayedTruth()
    __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __eq__
    __hash__ = object.__hash__


class EveryDunder:
    # answers every question in the way that passes the most checks
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __lt__(self, other): return True
    __le__ = __gt__ = __ge__ = __lt__
    def __hash__(self): return 0
    def __bool__(self): return True
    def __len__(self): return 0
    def __contains__(self, item): return True
    def __iter__(self): return iter(())
    def __getattr__(self, name): return self
    def __call__(self, *a, **k): return self
    def __getitem__(self, key): return self
    def __sub__(self, other): return 0.0
    __rsub__ = __add__ = __radd__ = __mul__ = __rmul__ = __truediv__ = __sub__
    def __abs__(self): return 0.0
    def __float__(self): return 0.0
    def __round__(self, n=None): return self


class Shouty(str):
    __eq__ = lambda self, other: True
    __hash__ = str.__hash__


class Count(int):
    def __bool__(self):
        return True
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__


class Bag(list):
    def __contains__(self, item):
        return True


class Contains:
    def __contains__(self, item):
        return True


class Items:
    def __iter__(self):
        return iter([1, 2])
    def __contains__(self, item):
        return True


from enum import Enum, IntEnum
from typing import NamedTuple


class Level(IntEnum):
    LOW = 1
    HIGH = 2


class Mode(str, Enum):
    FAST = "fast"


class Pair(NamedTuple):
    a: int
    b: str


class NotABool:
    def __eq__(self, other):
        return 1


def parse(text):
    if not text:
        raise ParseError("empty", 3)
    return text.split()


def call_back(fn, *args):
    return fn(*args)


def fill(env, key, value):
    env[key] = value


def shout(text):
    print(text.upper())
    print("to stderr", file=sys.stderr)
    return len(text)


def nap(seconds):
    time.sleep(seconds)


def die():
    os._exit(3)


def hoard():
    raise MemoryError()


def values():
    from collections import Counter, OrderedDict, defaultdict
    from decimal import Decimal
    from fractions import Fraction
    import datetime
    return {
        "counter": Counter("abca"),
        "ordered": OrderedDict(b=1, a=2),
        "default": defaultdict(list, {"k": [1]}),
        "fraction": Fraction(1, 3),
        "decimal": Decimal("2.50"),
        "date": datetime.date(2026, 1, 2),
        "type": int,
        "types": (list, Fraction),
    }


def peek(obj, name):
    return getattr(obj, name)


def retry(fn, errors):
    try:
        return fn()
    except errors as exc:
        raise exc


class Unsayable:
    # ends its process when asked to say what it is (after ``patience`` answers)
    def __init__(self, patience=0):
        self.patience = patience

    def __repr__(self):
        if self.patience <= 0:
            os._exit(4)
        self.patience -= 1
        return "said"
    __str__ = __format__ = __repr__


def big_range():
    return range(60_000_000)


def shared_cube(n):
    leaf = [0] * n
    middle = [leaf] * n
    return [middle] * n


def grid():
    row = [0] * 3
    return [row] * 3  # the aliasing bug every Python programmer writes once


def ask_nonsense(n):
    conn = sys.modules["boxgym_worker"].SIDE.conn
    refused = 0
    for _ in range(n):
        try:
            conn.request(0, {})
        except RuntimeError:
            refused += 1
    return refused


def long_complaint():
    raise ValueError("a\\n" * 200_000)


def huge_fraction():
    from fractions import Fraction
    return Fraction(3**100_000, 2**100_000 + 1)


def long_named():
    return type("K" * 2000, (), {})()


def blow_up(items):
    leaf = [0] * 3000
    items[:] = [[leaf] * 3000] * 3000


def fresh_classes(n):
    tag = os.urandom(4).hex()
    return [type("K" + tag + str(i), (), {})() for i in range(n)]


class Shifty:  # a number that reads differently each time (and on bump, legitimately)

    def __init__(self):
        self.reads, self.base = 0, 0.0

    def __float__(self):
        self.reads += 1
        return self.base + self.reads

    __int__ = __index__ = lambda self: int(self.__float__())

    def bump(self):
        self.base += 100.0

    def __len__(self):
        self.reads += 1
        return self.reads


class Swallower:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return True  # swallows whatever the block raised, as contextlib.suppress does


def fail_inside():
    raise ValueError("the code's own error")


def answer_pings_with(kind):
    ops = sys.modules["boxgym_worker"].OPS
    if kind == "object":
        ops["ping"] = lambda conn, msg, memo: Unsayable()
    else:
        def ping(conn, msg, memo):  # the worker's own encoding says it once
            raise ValueError(Unsayable(patience=1))
        ops["ping"] = ping
"""


class LocalSession(checker.Session):
    """A Session whose workers are local subprocesses of this uid (no runner, no container)."""

    def __init__(self, root: Path, timeout: float = 60.0):
        self.events: list[dict] = []
        super().__init__(None, self.events.append, timeout, {})
        self.root = root
        self.procs: list[subprocess.Popen] = []

    def current(self):
        if self.side is None or not self.side.alive:
            self.gen += 1
            mine, theirs = socket.socketpair()
            env = wire.environment(
                {"BOXGYM_WORKER": json.dumps({"python_paths": [str(self.root)]})}
            )
            env["BOXGYM_RUNNER_DIR"] = str(RUNNER_DIR)
            boot = (
                "import os, sys; sys.path.insert(0, os.environ['BOXGYM_RUNNER_DIR']); "
                "import boxgym_worker; sys.path.pop(0); boxgym_worker.main(int(sys.argv[1]))"
            )
            argv = [sys.executable, "-I", "-c", boot, str(theirs.fileno())]
            self.procs.append(subprocess.Popen(argv, pass_fds=[theirs.fileno()], env=env))
            theirs.close()
            self.side = checker.CheckerSide(self.gen, mine, self.call_timeout)
        return self.side

    def lost(self, lost):
        if self.side is not None and self.side.alive:
            self.side.alive = False
            self.finding(checker._LOST_FINDINGS.get(lost.why, lost.why), lost.detail)
            self.side.conn.sock.close()
            self.side = None
        return lost

    def close(self):
        if self.side is not None:
            self.side.conn.sock.close()
        for proc in self.procs:
            proc.kill()
            proc.wait()


@pytest.fixture
def session(tmp_path, monkeypatch):
    (tmp_path / "proj.py").write_text(textwrap.dedent(PROJECT))
    sess = LocalSession(tmp_path)
    monkeypatch.setattr(checker, "SESSION", sess)
    finder = checker.Finder(["proj"])
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    sys.modules.pop("proj", None)
    yield sess
    sys.modules.pop("proj", None)
    sess.close()


def findings(sess) -> list[str]:
    return [e["name"] for e in sess.events if e.get("event") == "finding"]


# -- the codec ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        Fraction(-7, 3),
        Decimal("-0.00"),
        Decimal("NaN"),
        Counter("hello"),
        OrderedDict([("b", 1), ("a", 2)]),
        range(1, 10, 3),
        slice(1, None, 2),
        Path("/tmp/x y"),
        int,
        KeyError,
        Fraction,
        (Ellipsis, NotImplemented),
        bytearray(b"\x00\xff"),
    ],
)
def test_value_types_round_trip_exactly(value):
    back = wire.decode(wire.encode(value))
    assert type(back) is type(value)
    assert back == value or (isinstance(value, Decimal) and value.is_nan() and back.is_nan())


def test_datetimes_keep_their_zone_and_fold():
    import datetime as dt

    value = dt.datetime(2026, 3, 29, 1, 30, fold=1, tzinfo=dt.timezone(dt.timedelta(hours=2), "X"))
    back = wire.decode(wire.encode(value))
    assert back == value and back.tzinfo.tzname(None) == "X" and back.fold == 1
    assert type(wire.decode(wire.encode(dt.date(2026, 1, 1)))) is dt.date


def test_a_defaultdict_keeps_its_factory():
    back = wire.decode(wire.encode(defaultdict(list, {"a": [1]})))
    assert type(back) is defaultdict and back.default_factory is list and back["b"] == []


def test_aliasing_and_cycles_survive_with_a_memo():
    inner = [1]
    outer = [inner, inner]
    outer.append(outer)
    back = wire.decode(wire.encode(outer, memo=wire.Memo()), memo=wire.Memo())
    assert back[0] is back[1] and back[2] is back


def test_a_value_that_shares_its_parts_is_checked_in_linear_time():
    """The wire keeps aliases, so a small message can be a list of depth 60 whose every
    level holds the level below twice: 2**60 paths. Whether it is plain is decided by
    visiting each part once (else the checker would hang until the grading's deadline)."""
    import time

    shared: list = [1]
    for _ in range(60):
        shared = [shared, shared]
    began = time.monotonic()
    assert wire.is_plain(shared)
    shared[0][0] = object()  # one part that is not plain, reached through every path
    assert not wire.is_plain(shared)
    assert time.monotonic() - began < 1.0


# -- the boundary ---------------------------------------------------------------------------


def test_calls_classes_and_isinstance_go_through_the_worker(session):
    import proj

    point = proj.Point(3, -4)
    assert type(point) is proj.Point and isinstance(point, proj.Point)
    assert point.norm1() == 7 and point.x == 3
    assert isinstance(proj.Derived(), proj.Base) and not isinstance(proj.Base(), proj.Derived)
    assert point == proj.Point(3, -4) and point != proj.Point(3, 4)
    assert proj.parse("a b") == ["a", "b"] and type(proj.parse("a")) is list
    assert "proj" not in {m.split(".")[0] for m in sys.modules if m != "proj"} or True
    assert findings(session) == []


def test_a_number_is_read_once_until_the_worker_is_asked_anything_else(session):
    """An object answering each float() differently cannot steer a check that reads it
    several times (HumanEval/32's poly: math.pow(x, i) per term); a request between two
    reads (a method call) reads it afresh, and len() is asked every time (a test may poll
    an object the code's threads fill)."""
    import math

    import proj

    x = proj.Shifty()
    first = float(x)
    # int() is another question (its own first answer: the second read of the object)
    assert [float(x), math.pow(x, 1), int(x), float(x)] == [first, first, 2, first]
    x.bump()  # a request: the object may have changed
    assert float(x) != first and float(x) == float(x)
    assert len(x) != len(x)


def test_a_context_manager_of_the_code_cannot_swallow_the_checks_own_failure(session):
    import proj

    with pytest.raises(AssertionError), proj.Swallower():
        assert 1 == 2, "the check's verdict"
    with proj.Swallower():
        proj.fail_inside()  # the code's own error: its context manager may swallow it
    with proj.Swallower():
        raise KeyError("the check's own KeyError")  # as contextlib.suppress(KeyError) would


def test_the_projects_exceptions_are_mirrors_with_builtin_bases(session):
    import proj

    with pytest.raises(proj.ParseError) as info:
        proj.parse("")
    assert isinstance(info.value, ValueError)
    assert info.value.line == 3 and str(info.value) == "line 3: empty"
    assert type(info.value) is proj.ParseError
    made = proj.ParseError("made here", 7)  # constructed by the test, in the worker
    assert type(made) is proj.ParseError and str(made) == "line 7: made here" and made.line == 7


@pytest.mark.parametrize(
    ("kind", "described"), [("object", "a Unsayable"), ("exception", "ValueError: said")]
)
def test_the_last_ping_answered_with_an_unsayable_object_is_the_codes_forgery(
    session, kind, described
):
    """Outside a test the checker describes what the worker gave without asking it: an
    answer to the last liveness ping whose ``repr`` would end the worker is named by its
    type, the worker is never asked (it stays alive), and the session ends on a finding
    of the code's, not on an escaped error (which would be a crash, infra_error)."""
    import proj

    proj.answer_pings_with(kind)
    session.check_alive()
    (forgery,) = [e for e in session.events if e.get("event") == "finding"]
    assert forgery["name"] == "report_forgery" and forgery["test"] == "session end"
    assert forgery["detail"].endswith(described), forgery
    assert session.side.alive and proj.Point(1, 2).x == 1  # never asked: still serving


def test_what_the_checker_keeps_of_the_worker_is_bounded_over_the_session(
    session, monkeypatch, capsys
):
    """Answers under the read limits must not add up in the checker: the worker's output
    it prints (pytest keeps each test's) stops at the session's bound whatever the
    worker's own cap does, and describing more classes than the bound ends the worker as
    the code's ``resource_limit``, not the checker's memory."""
    import proj

    monkeypatch.setattr(wire, "MAX_SESSION_OUTPUT", 3000)
    monkeypatch.setattr(wire, "MAX_CLASSES", 500)
    session.output_left = [wire.MAX_SESSION_OUTPUT] * 2
    for i in range(4):  # four tests, each printing 1,000 characters a call, twice
        session.test = f"t{i}"
        proj.shout("x" * 1000)
        proj.shout("y" * 1000)
    printed = capsys.readouterr().out
    assert len(printed) < 3100 and printed.endswith("[boxgym: output truncated]\n")
    session.test = "classes"
    assert len(proj.fresh_classes(300)) == 300
    with pytest.raises(wire.Lost):
        proj.fresh_classes(300)  # 600 classes described by one worker
    assert findings(session) == ["resource_limit"]


def test_an_answer_is_bounded_by_what_it_stands_for_not_by_its_bytes(session):
    """A range and a value sharing its parts cross in a few bytes and can stand for
    gigabytes once a check makes a list or a text of them; past `wire.MAX_EXPANDED`
    items and characters the answer is the code's ``resource_limit`` (before, a check's
    ``tuple(answer)`` or its message got the checker killed for memory: infra_error).
    A small value with shared parts crosses as before."""
    import proj

    assert proj.grid() == [[0, 0, 0]] * 3
    with pytest.raises(wire.Lost):
        proj.big_range()
    session.test = "cube"
    with pytest.raises(wire.Lost):
        proj.shared_cube(3000)
    assert findings(session) == ["resource_limit", "resource_limit"]


def test_describing_an_exception_never_fails():
    """An exception whose plain argument has no text (an int of 5,000 digits) and no text
    from the wire is named by its type: describing it outside a test cannot crash the
    checker (before: ValueError out of `_said`, infra_error on every task)."""
    assert checker._said(ValueError(10**5000)) in ("a ValueError", "ValueError: <unprintable>")
    assert checker._said(KeyError("k")) == "KeyError: 'k'"


def test_what_the_checker_sends_is_never_refused_by_the_bound_on_answers(session):
    """`wire.expanded` bounds what the worker sends the checker, not what the checker sends:
    a check may call the code with an argument past the bound (before: the worker refused
    it, ended, and a correct solution failed as ``early_exit``)."""
    import proj

    big = "x" * (wire.MAX_EXPANDED + 1)
    assert proj.shout(big) == len(big) and findings(session) == []


def test_requests_the_checker_refuses_leave_nothing_held(session):
    """A request of the worker's that the checker refuses (an unknown or unhashable op)
    is answered with a plain error and no handle: before, each refusal's exception and
    its frame stayed in the checker for the worker (2-3 KB kept per 15 bytes read)."""
    import proj

    assert proj.ask_nonsense(500) == 500
    assert session.side.refs == {} and findings(session) == []


def test_what_the_checker_keeps_of_the_workers_exceptions_and_values_is_bounded(session):
    """An exception's text is kept up to `wire.MAX_SAID` (pytest keeps every failed
    report), a Fraction past `wire.MAX_FRACTION_DIGITS` is refused before its gcd, and
    an argument the code fills past `wire.MAX_EXPANDED` is put back as it was."""
    import proj

    with pytest.raises(ValueError) as info:
        proj.long_complaint()
    assert len(str(info.value)) <= wire.MAX_SAID + 20
    session.test = "fraction"
    with pytest.raises(wire.Lost):
        proj.huge_fraction()
    session.test = "argument"
    mine = [1, 2, 3]
    with pytest.raises(wire.Lost):
        proj.blow_up(mine)
    assert mine == [1, 2, 3]
    session.test = "class name"
    with pytest.raises(wire.Lost):
        proj.long_named()  # a mirror's names are kept for the session
    assert findings(session) == ["resource_limit"] * 3


def test_a_trusted_exception_crosses_and_comes_back_as_itself(session):
    import proj

    errors = []

    def fail():
        errors.append(TimeoutError("slow"))
        raise errors[-1]

    with pytest.raises(TimeoutError) as info:
        proj.retry(fail, (ConnectionError, TimeoutError))
    assert info.value is errors[-1]


def test_callbacks_run_here_and_see_the_workers_objects(session):
    import proj

    seen = []
    assert proj.call_back(lambda p: seen.append(p.x) or p.y, proj.Point(1, 2)) == 2
    assert seen == [1]


def test_mutations_of_argument_containers_come_back(session):
    import proj

    env = {"HOME": "/h"}
    proj.fill(env, "BIN", "/h/bin")
    assert env == {"HOME": "/h", "BIN": "/h/bin"}


def test_printed_output_reaches_this_process(session, capsys):
    import proj

    assert proj.shout("hi") == 2
    captured = capsys.readouterr()
    assert captured.out == "HI\n" and captured.err == "to stderr\n"


def test_stdlib_values_and_types_cross_as_values(session):
    import proj

    got = proj.values()
    assert type(got["counter"]) is Counter and got["counter"]["a"] == 2
    assert list(got["ordered"]) == ["b", "a"]
    assert got["default"]["new"] == [] and got["fraction"] == Fraction(1, 3)
    assert got["type"] is int and got["types"] == (list, Fraction)


CHECKS = {
    "==": lambda x: x == 5,
    "reflected ==": lambda x: 5 == x,
    "!=": lambda x: not (x != 5),
    "<": lambda x: x < 5,
    "in a list": lambda x: x in [5],
    "list ==": lambda x: [x] == [5],
    "truth": lambda x: bool(x),
    "not": lambda x: not x,
    "closeness": lambda x: abs(x - 5) < 1e-9,
    "reflected closeness": lambda x: abs(5 - x) < 1e-9,
    "round": lambda x: round(x, 2) == 5,
    "approx": lambda x: x == pytest.approx(5),
}


def passes(check, obj) -> bool:
    try:
        return check(obj) is True
    except BaseException:  # noqa: BLE001 - any exception fails a check
        return False


@pytest.mark.parametrize("liar", ["Liar", "FirstCallLiar", "DelayedLiar", "EveryDunder"])
@pytest.mark.parametrize("check", sorted(CHECKS))
def test_an_object_with_no_plain_value_decides_no_check(session, liar, check):
    """Whatever its operators answer, an object of the code that is no value fails."""
    import proj

    assert not passes(CHECKS[check], getattr(proj, liar)())
    with pytest.raises(checker.NotPlain):
        CHECKS[check](getattr(proj, liar)())
    assert "not_plain" in findings(session)


def test_the_worker_is_never_asked_about_a_value_of_the_checker(session):
    import proj

    asked = []
    session.side.conn.on_message = None  # quiet: the requests are what is counted
    real = session.request

    def request(op, target, args=(), kwargs=None, **fields):
        asked.append((op, fields.get("name")))
        return real(op, target, args, kwargs, **fields)

    session.request = request
    for check in CHECKS.values():
        assert not passes(check, proj.EveryDunder())
    names = {name for op, name in asked if op == "op"}
    assert not names & {"eq", "ne", "lt", "le", "gt", "ge", "bool", "sub", "rsub", "round"}


def test_value_subclasses_are_checked_on_their_plain_value(session):
    import proj

    assert proj.Shouty("x") == "x" and not proj.Shouty("x") == "y" and proj.Shouty("x") != "y"
    assert not proj.Count(0) and proj.Count(3) == 3 and proj.Count(3) != 4
    assert abs(proj.Count(3) - 3) == 0 and proj.Count(3) + 1 == 4 and -proj.Count(3) == -3
    assert 9 not in proj.Bag([1, 2]) and 2 in proj.Bag([1, 2]) and len(proj.Bag([1, 2])) == 2
    assert proj.Level.HIGH == 2 and proj.Level.HIGH > proj.Level.LOW and {1: "a"}[proj.Level.LOW]
    assert proj.Mode.FAST == "fast" and proj.Pair(1, "x") == (1, "x")
    assert proj.Pair(1, "x").b == "x" and type(proj.Pair(1, "x")) is proj.Pair
    assert list(proj.Bag([3, 4])) == [3, 4]
    assert findings(session) == []


def test_two_objects_of_the_code_are_compared_by_the_code_with_an_exact_bool(session):
    import proj

    assert proj.Point(1, 2) == proj.Point(1, 2) and not proj.Point(1, 2) == proj.Point(2, 1)
    assert proj.Point(1, 2) != proj.Point(2, 1)
    with pytest.raises(checker.NotPlain):
        assert proj.NotABool() == proj.NotABool()
    with pytest.raises(checker.NotPlain):  # the answer's truth is never asked of the worker
        assert proj.DelayedLiar() == proj.DelayedLiar()


def test_membership_in_an_object_with_no_value_is_its_own_answer_an_exact_bool(session):
    import proj

    assert 3 in proj.Items()  # its own __contains__: a query of its API
    assert 9 not in proj.Bag([1, 2])  # a list subclass: decided on its plain value


def test_a_ping_answered_with_anything_but_none_is_the_codes_doing(session):
    import proj

    proj.parse("a")  # a worker is up
    session.request = lambda *a, **k: (_ for _ in ()).throw(ValueError("\udcff no"))
    session.check_alive()  # returns: nothing escapes the checker's own bookkeeping
    assert findings(session) == ["report_forgery"]


def test_an_answer_over_the_size_limit_fails_the_test_as_a_resource_limit(session, monkeypatch):
    import proj

    monkeypatch.setattr(wire, "MAX_ANSWER", 1 << 20)
    session.side.conn.sock.close()
    session.side = None  # the next worker reads with the new limit
    with pytest.raises(wire.Lost) as lost:
        proj.parse("x" * (2 << 20))
    assert lost.value.why == "oversize" and findings(session) == ["resource_limit"]


def test_the_answers_of_one_test_are_bounded_together(session, monkeypatch):
    import proj

    monkeypatch.setattr(wire, "MAX_TEST_BYTES", 4 << 20)
    session.side.conn.sock.close()
    session.side = None
    session.test = "one test"
    with pytest.raises(wire.Lost) as lost:
        for _ in range(8):
            proj.parse("x" * (1 << 20))
    assert lost.value.why == "oversize"
    session.test = "the next test"  # a new test reads as much again
    assert proj.parse("a b") == ["a", "b"]


def test_printed_lone_surrogates_reach_the_checkers_streams_cleaned(session, capsys):
    import proj

    assert proj.shout("\udcff") == 1
    assert "\udcff" not in capsys.readouterr().out


def test_a_hang_fails_the_call_and_a_new_worker_takes_over(session):
    import proj

    session.call_timeout = 1.0
    session.side.conn.timeout = 1.0
    with pytest.raises(wire.Lost):
        proj.nap(30)
    assert findings(session) == ["timeout"]
    session.call_timeout = 60.0  # the next worker starts under whatever load there is
    assert proj.parse("a") == ["a"]  # re-imported by name in a fresh worker
    assert session.gen == 2


def test_a_worker_that_dies_is_an_early_exit(session):
    import proj

    with pytest.raises(wire.Lost):
        proj.die()
    assert findings(session) == ["early_exit"]


def test_running_out_of_memory_fails_the_call_with_a_resource_finding(session):
    import proj

    with pytest.raises(MemoryError):
        proj.hoard()
    assert findings(session) == ["resource_limit"]


def test_only_public_attributes_of_the_checkers_objects_are_readable(session):
    import proj

    class Holder:
        public = 1
        _private = 2

    def fn():
        return 0

    assert proj.peek(Holder(), "public") == 1
    for obj, name in ((Holder(), "_private"), (fn, "__globals__"), (fn, "__code__")):
        with pytest.raises(AttributeError):
            proj.peek(obj, name)
    gen = (x for x in [1])
    with pytest.raises(Exception, match="cannot be handed"):
        proj.peek(gen, "gi_frame")  # a frame is never handed over
    with pytest.raises(wire.NotPrimitive):
        proj.peek(sys, "modules")  # nor a module


# -- the channel ----------------------------------------------------------------------------


def _channel(timeout: float):
    mine, theirs = socket.socketpair()
    return wire.Connection(mine, None, {}, timeout=timeout), theirs


def test_a_peer_that_stops_reading_times_out_a_send_instead_of_hanging():
    conn, theirs = _channel(0.5)
    with pytest.raises(wire.Lost) as lost:
        conn.send({"blob": "x" * (16 << 20)})  # far more than a socket buffer holds
    assert lost.value.why == "timeout"
    conn.sock.close()
    theirs.close()


def test_a_peer_that_keeps_asking_never_holds_a_request_past_its_timeout(monkeypatch):
    """Each nested request comes well within the per-message wait; the request as a
    whole still ends at its timeout (the code cannot hold a check to the grading's end)."""
    monkeypatch.setattr(wire, "container_cpu", lambda: None)  # charged as wall time
    conn, theirs = _channel(0.5)
    stop = threading.Event()

    def keep_asking():
        reader = theirs.makefile("rb")
        reader.readline()  # the request
        n = 0
        while not stop.is_set():
            n += 1
            try:
                theirs.sendall(json.dumps({"q": n, "op": "anything"}).encode() + b"\n")
                reader.readline()  # its refusal
            except OSError:
                return
            time.sleep(0.05)

    asker = threading.Thread(target=keep_asking)
    asker.start()
    start = time.monotonic()
    with pytest.raises(wire.Lost) as lost:
        conn.request("ping")
    took = time.monotonic() - start
    stop.set()
    conn.sock.close()
    asker.join()
    theirs.close()
    assert lost.value.why == "timeout"
    assert 0.4 < took < 2.0


class _FakeCpu:
    """The container's CPU count as a test sets it: ``rate`` CPU seconds per second."""

    def __init__(self, rate: float) -> None:
        self.rate, self.start = rate, time.monotonic()

    def __call__(self) -> float:
        return (time.monotonic() - self.start) * self.rate


def _answer_after(theirs: socket.socket, seconds: float) -> threading.Thread:
    def answer() -> None:
        with theirs.makefile("rb") as reader:
            asked = json.loads(reader.readline())
        time.sleep(seconds)
        with contextlib.suppress(OSError):
            theirs.sendall(json.dumps({"a": asked["q"], "ok": wire.encode(7)}).encode() + b"\n")

    peer = threading.Thread(target=answer)
    peer.start()
    return peer


@pytest.mark.parametrize(
    ("cpu", "starved", "lost"),
    [
        (1.0, 0.0, r"0.4s of CPU"),  # the code burns: its CPU is charged
        (0.0, 0.0, r"\(0.4s\)"),  # the code waits on nothing (a sleep, a blocking read)
        (0.3, 0.7, None),  # the host left the container 30% of a CPU: not the code's time
    ],
)
def test_a_request_is_charged_what_the_code_took_not_the_hosts_delay(
    monkeypatch, cpu, starved, lost
):
    """Helpers Y and Z: a correct solution at half its limit failed under six busy loops
    on the host, and at a quarter of a CPU: wall-clock time was charged. Now the
    container's CPU is, and the waiting less the time the container waited for a CPU."""
    monkeypatch.setattr(wire, "container_cpu", _FakeCpu(cpu))
    monkeypatch.setattr(wire, "starved", _FakeCpu(starved))
    monkeypatch.setattr(wire, "WATCH_AFTER", 0.0)
    conn, theirs = _channel(0.4)
    peer = _answer_after(theirs, 0.6)  # 1.5 times the timeout
    if lost is None:
        assert conn.request("compute") == 7
    else:
        with pytest.raises(wire.Lost, match=lost) as raised:
            conn.request("compute")
        assert raised.value.why == "timeout"
    peer.join()
    conn.sock.close()
    theirs.close()


def test_the_time_the_container_waited_for_a_cpu_is_not_the_peers(monkeypatch):
    """At a tenth of a CPU a request answered after three times its timeout passes."""
    monkeypatch.setattr(wire, "container_cpu", _FakeCpu(0.1))
    monkeypatch.setattr(wire, "starved", _FakeCpu(0.9))  # ready to run 90% of the time
    monkeypatch.setattr(wire, "WATCH_AFTER", 0.0)
    conn, theirs = _channel(0.3)
    peer = _answer_after(theirs, 0.9)
    assert conn.request("compute") == 7
    peer.join()
    conn.sock.close()
    theirs.close()


def test_without_a_cpu_count_the_waiting_is_charged(monkeypatch):
    monkeypatch.setattr(wire, "container_cpu", lambda: None)
    conn, theirs = _channel(0.4)
    peer = _answer_after(theirs, 0.6)
    with pytest.raises(wire.Lost) as lost:
        conn.request("compute")
    assert lost.value.why == "timeout"
    peer.join()
    conn.sock.close()
    theirs.close()


def test_the_time_spent_serving_the_peer_is_not_the_peers():
    """A request whose peer asks back something slow to serve here (a check's callback
    doing real work) still gets its answer: only the waiting for the peer counts."""
    mine, theirs = socket.socketpair()
    conn = wire.Connection(mine, None, {"slow": lambda c, m, memo: time.sleep(0.8)}, timeout=0.5)

    def ask_back():
        reader = theirs.makefile("rb")
        asked = json.loads(reader.readline())
        theirs.sendall(json.dumps({"q": 1, "op": "slow"}).encode() + b"\n")
        reader.readline()  # served, after 0.8 s of this side's time
        answer = {"a": asked["q"], "ok": wire.encode(7)}
        theirs.sendall(json.dumps(answer).encode() + b"\n")

    peer = threading.Thread(target=ask_back)
    peer.start()
    assert conn.request("compute") == 7
    peer.join()
    conn.sock.close()
    theirs.close()


@pytest.mark.parametrize(
    ("written", "why"),
    [(b"", "ended"), (b"not json\n", "protocol"), (b"[1, 2]\n", "protocol")],
)
def test_a_peer_that_ends_or_writes_garbage_is_lost(written, why):
    conn, theirs = _channel(2.0)
    theirs.sendall(written)
    if not written:
        theirs.close()
    with pytest.raises(wire.Lost) as lost:
        conn.recv()
    assert lost.value.why == why
    conn.sock.close()
    theirs.close()


@pytest.mark.parametrize(
    "line",
    [b"[" * 100_000 + b"]" * 100_000, b'{"a": ' + b"9" * 5000 + b"}", b'{"a": "\xff"}'],
    ids=["nested past the recursion limit", "an integer past the digit limit", "not UTF-8"],
)
def test_a_line_json_cannot_read_is_a_protocol_breach(line):
    """Whatever the worker writes, the checker's reading ends as Lost: never an exception
    that would crash the checker (an infra_error paid for by the code under test)."""
    conn, theirs = _channel(5.0)
    writer = threading.Thread(target=theirs.sendall, args=(line + b"\n",))
    writer.start()
    with pytest.raises(wire.Lost) as lost:
        conn.recv()
    writer.join()
    assert lost.value.why == "protocol"
    conn.sock.close()
    theirs.close()
