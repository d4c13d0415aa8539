"""The strict value boundary of the trusted runner (imported from its file, stdlib only)."""

import importlib.util
import math

import pytest

from gym._grading._checks import RUNNER_PATH

spec = importlib.util.spec_from_file_location("boxgym_runner", RUNNER_PATH)
runner = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runner)


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -(10**40),
        1.5,
        float("inf"),
        "héllo",
        b"\x00\xff",
        (1, [2, {3: "x"}]),
        {1, 2},
        frozenset({"a"}),
        {"k": (None, 2.0)},
        1 + 2j,
    ],
)
def test_round_trip_keeps_exact_types(value):
    back = runner.decode(runner.encode(value))
    assert back == value and type(back) is type(value)


def test_nan_round_trips_as_nan():
    assert math.isnan(runner.decode(runner.encode(float("nan"))))


def test_bool_is_not_confused_with_int():
    assert runner.decode(runner.encode(True)) is True
    assert type(runner.decode(runner.encode(1))) is int


@pytest.mark.parametrize(
    "value", [object(), [1, object()], {"a": lambda: 1}, type("X", (int,), {})(3)]
)
def test_anything_but_exact_builtins_is_refused(value):
    with pytest.raises(runner.NotPrimitive):
        runner.encode(value)


def test_final_outcome_requires_a_passing_call_phase():
    assert (
        runner.final_outcome({"setup": "passed", "call": "passed", "teardown": "passed"})
        == "passed"
    )
    assert runner.final_outcome({"setup": "passed"}) == "failed"
    assert runner.final_outcome({"setup": "skipped"}) == "skipped"
    assert runner.final_outcome({"call": "passed", "teardown": "failed"}) == "failed"


def test_a_test_whose_teardown_never_reported_did_not_pass():
    """The grading's time ran out in a teardown: its call's pass is not the test's."""
    assert runner.final_outcome({"setup": "passed", "call": "passed"}) == "unfinished"
    assert runner.final_outcome({"call": "passed"}) == "passed"  # the calls kind: one phase


def test_a_test_collected_and_never_reported_is_missing():
    """The run ended (an internal error, an interruption) before a collected test ran."""
    import types

    passed = [
        {"id": "t.py::a", "when": w, "outcome": "passed"} for w in ("setup", "call", "teardown")
    ]
    events = [
        {"event": "collected", "id": "t.py::a"},
        {"event": "collected", "id": "t.py::b[2]"},
        *passed,
        {"event": "finished", "exitstatus": 3},
    ]
    sup = types.SimpleNamespace(
        events=events, last_worker_exit=None, forged=0, checker_status=0, marks={}, t0=0.0, out=b""
    )
    assert runner.summarise(sup, False)["tests"] == {"t.py::a": "passed", "t.py::b[2]": "missing"}


def test_a_checker_killed_at_the_memory_limit_is_the_codes_not_an_error():
    """The kernel's kill at the container's limit: the code filled it (a memfd, its score
    lowered), whichever process the kernel took; unfinished otherwise is ours."""
    import types

    sup = types.SimpleNamespace(
        events=[{"event": "collected", "id": "check_1"}],
        last_worker_exit=None,
        forged=0,
        checker_status=-9,
        marks={},
        t0=0.0,
        out=b"",
    )
    assert runner.summarise(sup, False)["error"].startswith("the checker ended without finishing")
    killed = runner.summarise(sup, False, memory_killed=True)
    assert killed["error"] is None and killed["tests"] == {"check_1": "missing"}


def test_huge_ints_cross_the_boundary():
    big = -(10**5000) + 7
    assert runner.decode(runner.encode(big)) == big


def test_the_runner_bytecode_shipped_is_the_runner_source_compiled():
    """Each runner module's .pyc decodes to the code of its shipped source, under this
    Python's cache tag (a container with another Python ignores it and compiles)."""
    import marshal
    import sys

    from gym._grading._checks import _RUNNER, _runner_bytecode

    compiled = _runner_bytecode()
    tag = sys.implementation.cache_tag
    assert set(compiled) == {f"__pycache__/{name[:-3]}.{tag}.pyc" for name in _RUNNER}
    for name, source in _RUNNER.items():
        pyc = compiled[f"__pycache__/{name[:-3]}.{tag}.pyc"]
        assert pyc[:4] == importlib.util.MAGIC_NUMBER
        assert int.from_bytes(pyc[4:8], "little") == 0b01  # hash-based, unchecked
        assert pyc[8:16] == importlib.util.source_hash(source)
        assert marshal.loads(pyc[16:]) == compile(source, name, "exec", dont_inherit=True)


def test_a_changed_runner_ships_its_own_bytecode(monkeypatch):
    """The bytecode follows the source shipped (a weakened runner in the red team too)."""
    import marshal
    import sys

    from gym._grading import _checks

    changed = _checks._RUNNER["boxgym_runner.py"] + b"\nCHANGED = 1\n"
    monkeypatch.setitem(_checks._RUNNER, "boxgym_runner.py", changed)
    pyc = _checks._runner_bytecode()[
        f"__pycache__/boxgym_runner.{sys.implementation.cache_tag}.pyc"
    ]
    assert "CHANGED" in marshal.loads(pyc[16:]).co_names


_LAZY = ("fractions", "decimal", "datetime", "pathlib")
_FRESH = """
import sys
sys.path.insert(0, sys.argv[1])
import boxgym_wire as wire
before = sorted(m for m in {lazy!r} if m in sys.modules)
tagged = [
    {{"t": "Fraction", "v": ["3", "7"]}},
    {{"t": "Decimal", "v": "1.10"}},
    {{"t": "path", "k": "PurePosixPath", "v": "/a/b"}},
    {{"t": "date", "v": [2024, 2, 29]}},
    {{"t": "datetime", "v": [2024, 2, 29, 1, 2, 3, 4, 1], "z": [0, 3600, 0, "X"]}},
    {{"t": "time", "v": [1, 2, 3, 4, 0], "z": None}},
    {{"t": "timedelta", "v": [1, 2, 3]}},
]
values = [wire.decode(t) for t in tagged]
again = [wire.encode(v) for v in values]
plain = [wire.is_plain(v) for v in values]
print(before, again == tagged, plain)
"""


def test_the_codec_imports_value_modules_only_when_a_value_needs_them():
    """A grading process starts without fractions, decimal, datetime or pathlib (about 20
    ms each start); values of their types still cross, and are plain, as before."""
    import subprocess
    import sys

    from gym._grading._checks import RUNNER_PATH

    script = _FRESH.format(lazy=_LAZY)
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script, str(RUNNER_PATH.parent)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split(" ", 1)
    assert out[0] == "[]"
    assert out[1].strip() == "True [True, True, True, True, True, True, True]"


_JSON_VALUES = [
    None,
    "é\u2028\x00\ud800",
    -(10**30),
    [1, 2.5, -0.0, float("inf"), float("-inf"), True, False],
    {"b": {"z": 1, "a": [None, {}]}, "a": []},
]


@pytest.mark.parametrize("value", _JSON_VALUES)
@pytest.mark.parametrize("sort_keys", [False, True])
def test_the_runners_json_is_jsons(value, sort_keys):
    """The grading processes' JSON (json's C functions, without the json package) writes
    the text json.dumps writes and reads it back as json.loads does."""
    import json

    wire = runner.wire
    assert wire._ENCODER is not None and wire._SCAN is not None  # the C path, on 3.11
    text = wire.dumps(value, sort_keys=sort_keys)
    assert text == json.dumps(value, separators=(",", ":"), sort_keys=sort_keys)
    assert wire.loads(text) == json.loads(text)
    assert wire.loads(f" \n{text}\t".encode()) == json.loads(text)


@pytest.mark.parametrize(
    "text", ["", " ", "{", "[1,]", "1 2", "nan", '{"a":1}x', b"\xff", '"\x01"']
)
def test_the_runners_json_refuses_what_json_refuses(text):
    import json

    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        runner.wire.loads(text)


def test_the_runners_json_refuses_what_json_cannot_write():
    wire = runner.wire
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        wire.dumps(loop)
    with pytest.raises(TypeError, match="not JSON serializable"):
        wire.dumps({"a": object()})
    assert wire.dumps([{"a": 1}]) == '[{"a":1}]'  # nothing left behind by the failures
