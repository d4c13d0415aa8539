"""Shipped hidden checks never decide an equality with the code under test's own ``__eq__``.

In grading, an object of the project under test is a handle to the worker process: an
``==`` between two of them runs the project's ``__eq__`` (docs/security.md,
"Non-promises"). So the shipped hidden tests compare plain values (fields, strings,
numbers) instead of ``result == ProjectClass(...)``. This reads every hidden test file's
syntax tree: no ``==`` or ``!=`` has a call of a name imported from the project on
either side.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SEEDS = Path(__file__).resolve().parent.parent / "seeds"
HIDDEN = sorted(p for p in SEEDS.glob("*/*/hidden/**/*.py"))
TRUSTED = set(sys.stdlib_module_names) | {"pytest", "_pytest", "hypothesis"}


def _project_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] not in TRUSTED:
                names |= {a.asname or a.name for a in node.names}
    return names


def _object_equalities(tree: ast.Module, project: set[str]) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        if not any(isinstance(op, ast.Eq | ast.NotEq) for op in node.ops):
            continue
        for side in [node.left, *node.comparators]:
            if (
                isinstance(side, ast.Call)
                and isinstance(side.func, ast.Name)
                and side.func.id in project
                and side.func.id[:1].isupper()  # a class: its instances are project objects
            ):
                lines.append(node.lineno)
    return lines


def test_there_are_hidden_checks_to_read():
    assert len(HIDDEN) > 50


@pytest.mark.parametrize("path", HIDDEN, ids=lambda p: str(p.relative_to(SEEDS)))
def test_no_hidden_check_compares_a_project_object_with_equality(path):
    tree = ast.parse(path.read_text())
    assert _object_equalities(tree, _project_names(tree)) == []


def test_the_check_finds_an_object_equality():
    source = "from pricing import Line\n\ndef test():\n    assert f() == Line(1)\n"
    tree = ast.parse(source)
    assert _object_equalities(tree, _project_names(tree)) == [4]
    plain = "from decimal import Decimal\n\ndef test():\n    assert f() == Decimal(1)\n"
    tree = ast.parse(plain)
    assert _object_equalities(tree, _project_names(tree)) == []
