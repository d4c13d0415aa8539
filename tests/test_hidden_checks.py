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


def _aliases(tree: ast.Module, project: set[str]) -> set[str]:
    """Module-level names bound to a project class or one of its attributes (``I = Interval``,
    ``V = Version.parse``): calling one makes a project object too."""
    classes = {name for name in project if name[:1].isupper()}
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and _makes_object(node.value, classes):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _makes_object(node: ast.AST, classes: set[str]) -> bool:
    """A project class, or an attribute of one (``Version.parse``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in classes


def _made(node: ast.AST, makers: set[str]) -> bool:
    """Whether the value is a project object made here, or a list, tuple, set or dict
    written out holding one (``[I(1, 6)]``); what a call or attribute of one gives is not."""
    if isinstance(node, ast.Call):
        return _makes_object(node.func, makers)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return any(_made(item, makers) for item in node.elts)
    if isinstance(node, ast.Dict):
        return any(_made(item, makers) for item in [*node.keys, *node.values] if item)
    if isinstance(node, ast.Starred):
        return _made(node.value, makers)
    return False


def _object_equalities(tree: ast.Module, project: set[str]) -> list[int]:
    """Lines of an ``==`` or ``!=`` with a project object made on either side."""
    makers = {name for name in project if name[:1].isupper()} | _aliases(tree, project)
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        if not any(isinstance(op, ast.Eq | ast.NotEq) for op in node.ops):
            continue
        if any(_made(side, makers) for side in [node.left, *node.comparators]):
            lines.append(node.lineno)
    return lines


def test_there_are_hidden_checks_to_read():
    assert len(HIDDEN) > 50


UNDER_TEST = {
    "pyrepo/semver-prerelease/hidden/test_semver_precedence_hidden.py": (
        "the task is Version's ==, < and hash(): its checks ask them, each expecting True for "
        "some pairs and False for others, so no constant answer passes"
    ),
}
"""Hidden tests whose subject is the project's own equality, and why a lie cannot pass them."""


@pytest.mark.parametrize("path", HIDDEN, ids=lambda p: str(p.relative_to(SEEDS)))
def test_no_hidden_check_compares_a_project_object_with_equality(path):
    tree = ast.parse(path.read_text())
    found = _object_equalities(tree, _project_names(tree))
    assert (found != []) == (path.relative_to(SEEDS).as_posix() in UNDER_TEST), found


def test_the_check_finds_an_object_equality():
    source = "from pricing import Line\n\ndef test():\n    assert f() == Line(1)\n"
    tree = ast.parse(source)
    assert _object_equalities(tree, _project_names(tree)) == [4]
    aliased = (
        "from spans import Interval\nI = Interval\n\ndef test():\n    assert f() == [I(1, 6)]\n"
    )
    tree = ast.parse(aliased)
    assert _object_equalities(tree, _project_names(tree)) == [5]
    parsed = "from verspec import Version\nV = Version.parse\nassert [a == V(t) for t in x]\n"
    tree = ast.parse(parsed)
    assert _object_equalities(tree, _project_names(tree)) == [3]
    plain = "from decimal import Decimal\n\ndef test():\n    assert f() == Decimal(1)\n"
    tree = ast.parse(plain)
    assert _object_equalities(tree, _project_names(tree)) == []
