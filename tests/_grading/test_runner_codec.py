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
