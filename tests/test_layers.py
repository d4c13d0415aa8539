"""gym/'s imports, read with ast: no import circle, and no import from a lower layer up.

The layers are those of DESIGN.md, bottom to top. Every import counts: at module level,
inside a function (lazy), and under ``if TYPE_CHECKING:`` for the layering (a type-only
import up is still a dependency on the layer above). Circles are sought over the imports
that run (type-only ones cannot close a circle at import time).
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

A public submodule (``gym.sandbox``, ``gym.runs``...) sits at the layer of the highest
module it re-exports from."""

# Every module of gym/, by layer (DESIGN.md). A new module goes here, in its layer.
LAYERS: dict[int, tuple[str, ...]] = {
    1: (  # errors and shared models, and the small utilities everything may use
        "gym._errors",
        "gym._models",
        "gym._tools",
        "gym._http",
        "gym._paths",
        "gym._cache",
        "gym._tree",
        "gym._version",
        "gym.errors",  # public: the exception tree
        "gym._phase",
        "gym._git",
        "gym._exit",
        "gym._startup",
        "gym._progress",
        "gym._text",
    ),
    2: (  # sandbox (Docker) and the images it runs
        "gym._sandbox",
        "gym._sandbox._base",
        "gym._sandbox._config",
        "gym._sandbox._docker",
        "gym._sandbox._engine",
        "gym._sandbox._gate",
        "gym._sandbox._lazy",
        "gym._sandbox._link",
        "gym._sandbox._local",
        "gym._sandbox._manifest",
        "gym._sandbox._netless",
        "gym._sandbox._keeper",
        "gym._sandbox.keeper.boxgym_keeper",
        "gym._sandbox._once",
        "gym._sandbox._pool",
        "gym._sandbox._provider",
        "gym._sandbox._seccomp",
        "gym._sandbox._shell",
        "gym._sandbox._stream",
        "gym._sandbox._tar",
        "gym._images",
        "gym.sandbox",  # public: sandboxes and providers
        "gym.images",  # public: images
        "gym._image_disk",
    ),
    3: (  # grading
        "gym._grading",
        "gym._grading._ast",
        "gym._grading._checks",
        "gym._grading._diff",
        "gym._grading._export",
        "gym._grading._files",
        "gym._grading._trajectory",
        "gym._grading._verdict",
        "gym._grading._judge",
        "gym._grading._judge._cache",
        "gym._grading._judge._client",
        "gym._grading._judge._parse",
        "gym._grading._judge._prompts",
        "gym._grading.runner.boxgym_judge",
        "gym._grading.runner.boxgym_runner",
        "gym._grading.runner.boxgym_wire",
        "gym._grading.runner.boxgym_worker",
    ),
    4: (  # environments core and registry
        "gym._env",
        "gym._spaces",
        "gym._wrappers",
        "gym._code",
        "gym._panel",  # the validation panel of code tasks (liar, constants, echo, empty)
        "gym._registry",
        "gym._scaffold",
        "gym._splits",  # split roles: asks the registry for a family's declared splits
        "gym._dataset",  # the importer: a record into a task's files
        "gym._importer",
        "gym.datasets",  # public: the importer's front door for environment authors
        "gym.authoring",  # public: writing environment families
        "gym.grading",  # public: graders (grade_code lives with the code family, layer 4)
    ),
    5: (  # policies
        "gym._policy",
        "gym._policy._base",
        "gym._policy._grammar",
        "gym._policy._local",
        "gym._policy._openai",
        "gym._policy._parse",
        "gym._policy._scripted",
        "gym._policy._serve",
        "gym._policy._tiny",
    ),
    6: (  # store
        "gym._store",
        "gym._store._models",
        "gym._store._store",
    ),
    7: (  # runner and statistics: rollout, runs, reports, regrade, validate, exports, view
        "gym._rollout",
        "gym._executor",
        "gym._ray",  # the Ray executor (imports ray, an optional extra, lazily)
        "gym._ray_cluster",
        "gym._runner",
        "gym._concurrency",
        "gym._regrade",
        "gym._validate",
        "gym._replay",  # a policy that reads the store, so above the store
        "gym._report",
        "gym._stats",
        "gym._export_data",
        "gym._view",
        "gym._view._episode",
        "gym._view._episodes",
        "gym._view._links",
        "gym._view._live",
        "gym._view._runs",
        "gym._view._search",
        "gym._view._server",
        "gym._view._site",
        "gym._view._state",
        "gym._view._terminal",
        "gym._view._text",
        "gym._view._training",
        "gym._plot",
        "gym._calibrate",
        "gym._redteam",  # the red-team suite: attacks through envs, policies, store, runner
        "gym._redteam._canary",
        "gym._redteam._containment",
        "gym._redteam._core",
        "gym._redteam._episode",
        "gym._redteam._faults",
        "gym._redteam._false_positive",
        "gym._redteam._infra",
        "gym._redteam._probes",
        "gym._redteam._provenance",
        "gym._redteam._reward",
        "gym._redteam._sql",
        "gym._redteam._stub",
        "gym._redteam._suite",
        "gym._redteam._support",
        "gym._redteam._sweep",
        "gym.policies",  # public: every policy (ReplayPolicy reads the store: layer 7)
        "gym.runs",  # public: running and reporting benchmarks from Python
    ),
    8: (  # train
        "gym.train",
        "gym.train._batch",
        "gym.train._episodes",
        "gym.train._grpo",
        "gym.train._grpo_collect",
        "gym.train._grpo_watch",
        "gym.train._grpo_weights",
        "gym.train._loss",
        "gym.train._rewards",
        "gym.train._rft",
        "gym.train._samples",
    ),
    9: (  # CLI
        "gym._cli",
        "gym._cli._app",
        "gym._cli._datasets",
        "gym._cli._doctor",
        "gym._cli._judge",
        "gym._cli._redteam",
        "gym._cli._rft",
        "gym._cli._runs",
        "gym._cli._tables",
        "gym._cli._train",
    ),
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


def layer_of() -> dict[str, int]:
    return {module: layer for layer, modules in LAYERS.items() for module in modules}


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
        f"{missing} have no layer: add each new module of gym/ to LAYERS in "
        "tests/test_layers.py, in its layer of DESIGN.md (errors/models < sandbox < grading "
        "< env core/registry < policies < store < runner/stats < train < CLI)"
    )
    stale = sorted(set(layers) - modules)
    assert not stale, f"{stale} are in LAYERS of tests/test_layers.py but not in gym/: remove them"


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
        "imports from a lower layer to a higher one (DESIGN.md; nothing inside gym/ may "
        f"import the front door `gym`, only `gym._x` modules):\n{shown}\n"
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
    assert found[("gym._cli._judge", "gym._calibrate")].lazy is True
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
