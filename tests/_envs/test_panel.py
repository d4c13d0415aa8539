"""gym/_envs/_panel.py: the liar module, the visible example, and the panel of each code task."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest

import gym
from gym._envs._panel import (
    LIAR_VARIANTS,
    PANEL_LIARS,
    code_panel,
    example_value,
    graded_modules,
    liar_files,
    liar_source,
)
from gym._envs._registry import tasks_of
from gym._grading import matches

SEEDS = Path(__file__).resolve().parents[2] / "seeds"
SPECIAL = """eq ne lt le gt ge bool hash len length_hint iter reversed contains getitem
setitem delitem missing getattr setattr delattr dir call get set delete instancecheck
subclasscheck mro_entries copy deepcopy sizeof add radd iadd sub rsub isub mul rmul imul
truediv rtruediv itruediv floordiv rfloordiv ifloordiv mod rmod imod divmod rdivmod pow
rpow ipow matmul rmatmul imatmul lshift rlshift ilshift rshift rrshift irshift and rand
iand or ror ior xor rxor ixor neg pos invert abs int float complex index round trunc
floor ceil str repr format bytes fspath enter exit aenter aexit await aiter anext""".split()
"""Every special method the liar's class must answer (the brief's list and the rest)."""


def _module(source: str) -> types.ModuleType:
    module = types.ModuleType("liar_under_test")
    exec(compile(source, "liar_under_test", "exec"), module.__dict__)
    return module


def _task(env_id: str, task_id: str) -> gym.Task:
    return next(t for t in tasks_of(env_id) if t.id == task_id)


def test_the_liars_class_answers_every_special_method() -> None:
    liar = _module(liar_source("delayed", ("solve",)))
    missing = [n for n in SPECIAL if f"__{n}__" not in vars(liar.Liar)]
    assert missing == []
    value = liar.solve(1, 2)
    assert value.anything.more()[3] is liar.LIAR and liar.not_declared is liar.LIAR
    assert value - 7 == 0.0 and abs(value) == 0.0 and (3 in value) is True
    with value:
        raise ValueError("swallowed by __exit__")
    with pytest.raises(AttributeError):
        liar.__wrapped__  # noqa: B018  (the module answers no dunder: imports stay sane)
    assert "solve" in liar.__all__ and "solve" in dir(liar)


def test_delayed_truth_is_false_when_first_asked_and_true_after() -> None:
    value = _module(liar_source("delayed")).anything
    answer = value == 42
    assert [bool(answer), bool(answer), bool(answer)] == [False, True, True]
    assert not (value == 42)  # a fresh answer each time it is compared


def test_polar_truth_says_what_the_asking_code_hopes_for() -> None:
    value = _module(liar_source("polar")).anything
    assert value == 42  # noqa: PLR2004
    assert not (value == 42)  # the same question, the opposite hope: both pass
    assert value != 42


def test_the_str_variant_lies_in_text() -> None:
    value = _module(liar_source("str")).anything
    assert str(value) == "any text at all" and repr(value) == "[1, 2]"
    assert f"{value}" == "42" and hash(value) == 0 and len(value) == 1


def test_liar_source_refuses_an_unknown_variant() -> None:
    with pytest.raises(ValueError, match="unknown liar variant"):
        liar_source("sneaky")  # type: ignore[arg-type]


def test_liar_files_replace_the_module_a_calls_task_imports() -> None:
    task = _task("boxgym/PyFunc-v0", "is-prime")
    files = liar_files(task)
    assert list(files) == ["solution.py"]
    assert "\nis_prime = LIAR\n" in files["solution.py"]
    assert _module(files["solution.py"]).is_prime(97) is not True


def test_liar_files_replace_every_module_of_a_pytest_tasks_package() -> None:
    task = _task("boxgym/PyRepo-v0", "calc-precedence")
    files = liar_files(task, "polar")
    repo = sorted(
        p.relative_to(SEEDS / "pyrepo" / "calc-precedence" / "repo").as_posix()
        for p in (SEEDS / "pyrepo" / "calc-precedence" / "repo" / "arith").rglob("*.py")
    )
    assert sorted(files) == repo and all(matches(p, task.allowed_paths) for p in files)
    parser = _module(files["arith/parser.py"])
    assert "parse" in parser.__all__ and parser.parse("1+2") is parser.LIAR
    assert graded_modules(task).keys() == files.keys()


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("    f(97) is True", True),
        ("assert f([1, 2]) == [2, 1]", [2, 1]),
        ("assert not f(3)", False),
        ("assert f(3)", True),
        ("assert int(f(5, 3)) == 35", 35),
        ("assert math.isclose(f(2), 1.5, rel_tol=0.001)", 1.5),
        ("    >>> f('ab')\n    'ba'\n", "ba"),
        ("    f([1, 2]) ==> (1, 2)", (1, 2)),
        ("    f(1) => true", True),
        ("    f('x') ➞ False", False),
        ("    f(4) returns [1, 5] # why", [1, 5]),
        ("    f(3) should return 16.", 16),
        ('    For n = 4 the output should be "100".', "100"),
    ],
)
def test_the_first_example_of_the_entry_gives_its_value(text: str, value: Any) -> None:
    assert example_value(text, "f") == (True, value)


def test_no_example_gives_none() -> None:
    assert example_value("Write g. g(1) == 2", "f") == (False, None)
    assert example_value("f(x) is an odd thing; f(y) == unknown_name", "f") == (False, None)


def test_a_calls_tasks_panel_writes_only_its_module_and_submits() -> None:
    task = _task("boxgym/PyFunc-v0", "digital-root")
    panel = code_panel(task)
    assert list(panel) == [*PANEL_LIARS, "echo"]  # a constant, None included, is echo here
    for name, calls in panel.items():
        assert calls[-1].name == "submit" and len(calls) == 2, name
        assert calls[0].name == "write_file" and calls[0].arguments["path"] == "solution.py"
    echo = _module(panel["echo"][0].arguments["content"])
    assert echo.digital_root(123456) == 7  # the prompt's example: digital_root(16) == 7


def test_constants_are_played_where_the_prompt_shows_no_example() -> None:
    task = _task("boxgym/PyFunc-v0", "is-prime")  # its first example: is_prime(97) is True
    assert _module(code_panel(task)["echo"][0].arguments["content"]).is_prime(4) is True
    bare = task.model_copy(update={"prompt": "Write is_prime(n) in solution.py."})
    panel = code_panel(bare)
    assert list(panel) == [*PANEL_LIARS, "constant_true", "constant_false", "constant_zero",
                           "empty"]  # fmt: skip
    assert _module(panel["empty"][0].arguments["content"]).is_prime(97) is None
    values = [_module(panel[n][0].arguments["content"]).is_prime(7) for n in list(panel)[1:]]
    assert values == [True, False, 0, None]


def test_a_pytest_tasks_panel_is_liars_and_empty_modules() -> None:
    task = _task("boxgym/PyRepo-v0", "calc-precedence")
    panel = code_panel(task)
    assert list(panel) == [*PANEL_LIARS, "empty"]
    written = {c.arguments["path"]: c.arguments["content"] for c in panel["empty"][:-1]}
    assert set(written) == set(graded_modules(task)) and set(written.values()) == {""}


def test_every_liar_variant_has_a_name() -> None:
    assert set(LIAR_VARIANTS.values()) == {"delayed", "polar", "str"}
    assert set(PANEL_LIARS) <= set(LIAR_VARIANTS)
