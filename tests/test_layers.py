"""gym/'s imports, read with ast: no import circle, and no import from a lower layer up.

The folder tree is the layer diagram: each layer is a few private packages of gym/ and the
public modules that front them, and a module sits in the layer of the package that holds
it. Bottom to top (a module imports only from its own layer and those below):

1. ``gym._core``: errors, shared models and the small utilities (``gym.errors``);
2. ``gym._sandbox``: sandboxes and the images they run (``gym.sandbox``, ``gym.images``);
3. ``gym._grading``: exports, trusted runners, trajectory flags, verdicts;
4. ``gym._envs``, ``gym._datasets``: environments core, registry, dataset import
   (``gym.authoring``, ``gym.datasets``, ``gym.grading``);
5. ``gym._policy``; 6. ``gym._store``;
7. ``gym._run``, ``gym._reports``, ``gym._view``, ``gym._redteam``: running, reports, the
   viewer, the red team (``gym.runs``, ``gym.policies``, ``gym.redteam``);
8. ``gym.train``; 9. ``gym._cli``; and above all ``gym`` itself, the front door.

The environment families sit above it all, as a plugin's would: every module under
environments/ (and the plugin family of tests/plugin_family/) imports ``gym`` and its
public front doors only, never a private module (``gym._anything``).

Every import counts: at module level, inside a function (lazy), and under
``if TYPE_CHECKING:`` for the layering (a type-only import up is still a dependency on the
layer above). Circles are sought over the imports that run (type-only ones cannot close a
circle at import time).
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gym"

FRONT_DOOR = 10
"""gym/__init__.py: above everything; nothing inside gym/ may import it.

A public module (``gym.sandbox``, ``gym.runs``...) sits at the layer of the highest
package it re-exports from."""

# The packages and public modules of gym/, by layer (the module docstring). A module
# belongs to the package that holds it; a new package or public module goes here.
LAYERS: dict[int, tuple[str, ...]] = {
    1: ("gym._core", "gym.errors"),  # errors, shared models, the small utilities
    2: ("gym._sandbox", "gym.sandbox", "gym.images"),  # sandboxes and their images
    3: ("gym._grading", "gym.grading"),  # grading, code grading included
    4: (  # environments core and registry, dataset import
        "gym._envs",
        "gym._datasets",
        "gym.authoring",
        "gym.datasets",
    ),
    5: ("gym._policy",),  # policies
    6: ("gym._store",),  # the run store
    7: (  # running, reports, the viewer, the red team
        "gym._run",
        "gym._reports",
        "gym._view",
        "gym._redteam",  # attacks through envs, policies, store and runner
        "gym._serve",  # environments over the OpenEnv protocol (gym serve)
        "gym.policies",  # every policy (ReplayPolicy reads the store)
        "gym.redteam",  # writing attacks: the red team's front door
        "gym.runs",
        "gym.serve",  # serving environments to trainers
    ),
    8: ("gym.train",),
    9: ("gym._cli",),
    FRONT_DOOR: ("gym",),
}

# Intentional imports that break the rules, each with why. Keep it short; prefer a fix.
# Entries are (importer, imported).
ALLOWED: frozenset[tuple[str, str]] = frozenset()

# Files that run inside containers, not on the host: their imports are the image's.
IN_IMAGES = ("gym/_grading/runner/", "gym/_sandbox/keeper/", "environments/sql/runner.py")


@dataclass(frozen=True)
class Edge:
    """One import of a gym module by another."""

    importer: str
    imported: str
    line: int
    lazy: bool
    """Inside a function (run on first call, not at import)."""
    typing_only: bool
    """Under ``if TYPE_CHECKING:`` (never run)."""

    def where(self) -> str:
        kind = "type-only " if self.typing_only else "lazy " if self.lazy else ""
        return f"{self.importer}:{self.line} {kind}imports {self.imported}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def gym_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def package_of(module: str) -> str | None:
    """The entry of LAYERS that holds a module: itself, or its closest listed package."""
    listed = {entry for entries in LAYERS.values() for entry in entries}
    name = module
    while name not in listed and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in listed and (name != "gym" or module == "gym") else None


def layer_of() -> dict[str, int]:
    """Module of gym/ -> its layer (modules in no listed package are left out)."""
    by_entry = {entry: layer for layer, entries in LAYERS.items() for entry in entries}
    found = {module: package_of(module) for module in gym_modules()}
    return {module: by_entry[entry] for module, entry in found.items() if entry}


def _typing_lines(tree: ast.Module) -> set[int]:
    """Lines of the bodies of ``if TYPE_CHECKING:`` blocks."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _lazy_lines(tree: ast.Module) -> set[int]:
    """Lines inside functions."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool) -> Iterator[str]:
    """The gym modules an import statement loads (the deepest known module of each name)."""
    known = gym_modules()
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = importer.split(".") if is_package else importer.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, *([base] if base else [])])
        names = [
            f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
            for alias in node.names
        ]
    for name in names:
        if name.split(".")[0] != "gym":
            continue
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        yield name


@functools.cache
def edges() -> list[Edge]:
    found: list[Edge] = []
    for module, path in gym_modules().items():
        tree = ast.parse(path.read_text(), str(path))
        typing, lazy = _typing_lines(tree), _lazy_lines(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _targets(node, module, path.name == "__init__.py"):
                    if target != module:
                        found.append(
                            Edge(
                                module,
                                target,
                                node.lineno,
                                node.lineno in lazy,
                                node.lineno in typing,
                            )
                        )
    return found


def test_every_module_has_a_layer():
    modules, layers = set(gym_modules()), layer_of()
    missing = sorted(modules - set(layers))
    assert not missing, (
        f"{missing} are in no package of LAYERS in tests/test_layers.py: put each new module "
        "in the package of its layer (errors/models < sandbox < grading < env core/registry "
        "< policies < store < runner/reports < train < CLI), or list a new package there"
    )
    listed = {entry for entries in LAYERS.values() for entry in entries}
    stale = sorted(listed - modules)
    assert not stale, f"{stale} are in LAYERS of tests/test_layers.py but not in gym/: remove them"


def test_the_root_holds_only_the_front_doors():
    """gym/ holds __init__, the public modules and packages; every private module is in one."""
    listed = [entry.split(".") for entries in LAYERS.values() for entry in entries]
    public = {parts[1] for parts in listed if len(parts) == 2 and not parts[1].startswith("_")}
    loose = sorted(
        p.name
        for p in PACKAGE.iterdir()
        if p.suffix == ".py" and p.stem != "__init__" and p.stem not in public
    )
    assert not loose, (
        f"{', '.join(f'gym/{n}' for n in loose)} sit at gym/ root: a private module goes in "
        "the package of its layer (tests/test_layers.py), and only the public front doors "
        "stay at the root"
    )


def test_no_import_goes_up_a_layer():
    layers = layer_of()
    upward = [
        e
        for e in edges()
        if (e.importer, e.imported) not in ALLOWED
        and e.importer in layers
        and e.imported in layers
        and layers[e.imported] > layers[e.importer]
    ]
    shown = "\n".join(
        f"  {e.where()} (layer {layers[e.importer]} -> {layers[e.imported]})" for e in upward
    )
    assert not upward, (
        "imports from a lower layer to a higher one (the layers of tests/test_layers.py; "
        "nothing inside gym/ may import the front door `gym`, only `gym._x` modules):\n"
        f"{shown}\n"
        "Move the code to the layer where it belongs, or pass what it needs down as an argument."
    )


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of a graph: one per edge that closes one (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start)
    return found


def test_no_import_circle():
    graph: dict[str, set[str]] = {}
    for e in edges():
        if not e.typing_only and (e.importer, e.imported) not in ALLOWED:
            graph.setdefault(e.importer, set()).add(e.imported)
    found = circles(graph)
    shown = "\n".join("  " + " -> ".join(c) for c in found)
    assert not found, (
        f"import circles:\n{shown}\nMove what both ends need into a lower module (in a "
        "package, a private module that its __init__ and its submodules both import)"
    )


def test_the_checks_see_what_they_must():
    """The reader finds lazy, type-only, relative and front-door imports (so a pass means something)."""
    found = {(e.importer, e.imported): e for e in edges()}
    assert found[("gym._cli", "gym._cli._judge")].lazy is False
    assert found[("gym._cli._judge", "gym._reports._calibrate")].lazy is True
    assert found[("gym._sandbox._shell", "gym._sandbox._docker")].typing_only is True
    tree = ast.parse(
        "from . import _cache\nfrom .. import _errors\nimport gym\nfrom gym import _policy, make\n"
    )
    targets = [
        t for node in tree.body for t in _targets(node, "gym._grading._judge._client", False)
    ]  # type: ignore[arg-type]
    assert targets == ["gym._grading._judge._cache", "gym._grading", "gym", "gym._policy", "gym"]
    graph = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": {"d2"}, "d2": {"d"}, "e": {"a"}}
    assert circles(graph) == [["a", "b", "c", "a"], ["d", "d2", "d"]]
    assert circles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


# -- third-party imports are declared -----------------------------------------------------


@functools.cache
def third_party_imports() -> dict[str, set[str]]:
    """Top-level third-party import names of gym/ and environments/ -> files using them."""
    found: dict[str, set[str]] = {}
    for top in ("gym", "environments"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(IN_IMAGES):
                continue
            for node in ast.walk(ast.parse(path.read_text(), rel)):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module]
                    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                    else []
                )
                for name in names:
                    first = name.split(".")[0]
                    if first not in sys.stdlib_module_names and first not in (
                        "gym",
                        "environments",
                        "__future__",
                    ):
                        found.setdefault(first, set()).add(rel)
    return found


def declared() -> set[str]:
    """Normalised names of the distributions pyproject.toml declares (extras included)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        specs += extra
    names = set()
    for spec in specs:
        name = spec.split(";")[0]
        for stop in "[<>=!~ ":
            name = name.split(stop)[0]
        names.add(_normal(name))
    return names


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def test_every_third_party_import_is_declared():
    providers = importlib.metadata.packages_distributions()
    have = declared()
    missing = {
        module: sorted(files)
        for module, files in third_party_imports().items()
        if not {_normal(d) for d in providers.get(module, [module])} & have
    }
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


@pytest.mark.parametrize("module", ["numpy", "requests", "sqlalchemy", "docstring_parser"])
def test_the_import_scan_sees_known_imports(module):
    assert module in third_party_imports()


# -- environment families use the public API only ------------------------------------------

FAMILY_FOLDERS = (ROOT / "environments", ROOT / "tests" / "plugin_family" / "environments")
"""Where environment families live: the bundled ones, and the test plugin's."""


def front_doors() -> set[str]:
    """``gym`` and its public modules (the LAYERS entries without a private part)."""
    listed = {entry for entries in LAYERS.values() for entry in entries}
    return {e for e in listed if not private(e)}


def private(name: str) -> bool:
    """Whether a dotted gym name reaches past the front doors (a part starting with ``_``)."""
    return any(part.startswith("_") and not part.startswith("__") for part in name.split("."))


def gym_imports(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of every gym module or name a family's source imports.

    Statements at any depth (lazy ones too), each imported name with its module
    (``from gym import _paths`` is ``gym._paths``), and ``importlib.import_module`` calls
    with a literal name.
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func).endswith("import_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names = [node.args[0].value]
        else:
            continue
        yield from ((node.lineno, n) for n in names if n.split(".")[0] == "gym")


def test_environment_families_import_only_the_public_api():
    """environments/ is guarded as gym/ is: its families use gym as a plugin must."""
    found = []
    for folder in FAMILY_FOLDERS:
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(IN_IMAGES):
                continue
            tree = ast.parse(path.read_text(), rel)
            found += [f"{rel}:{line}: {name}" for line, name in gym_imports(tree) if private(name)]
    assert not found, (
        "environment families import private modules of gym (use gym and its public "
        "modules, docs/api.md; what a family needs goes to the front door of its layer):\n"
        + "\n".join(found)
    )


def test_the_family_check_sees_what_it_must():
    """Private imports in every form are found; the public ones are not."""
    source = (
        "import gym\nimport gym.sandbox\nfrom gym.redteam import register\n"
        "from gym import make, authoring\n"
        "import gym._core._paths\nfrom gym import _paths\nfrom gym._envs import x\n"
        "def f():\n    import importlib\n    importlib.import_module('gym._store')\n"
    )
    names = [n for _, n in gym_imports(ast.parse(source))]
    assert [n for n in names if private(n)] == [
        "gym._core._paths",
        "gym._paths",
        "gym._envs",
        "gym._envs.x",
        "gym._store",
    ]
    assert {"gym", "gym.sandbox", "gym.redteam.register", "gym.make"} <= set(names)
    assert {"gym", "gym.authoring", "gym.redteam", "gym.sandbox"} <= front_doors()
    assert all(folder.is_dir() for folder in FAMILY_FOLDERS)
