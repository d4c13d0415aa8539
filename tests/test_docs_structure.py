"""What the docs say about the structure is true: layers, families, paths, names, figure.

docs/architecture.md's layer table lists exactly the packages of tests/test_layers.py, its
families table exactly the family folders of environments/ and the ids they register;
every path and every ``gym.`` name in README.md and docs/ exists; every renamed public
name in the names table still resolves to its new name, warning where the table says so;
and docs/episode.svg is what scripts/episode_figure.py draws.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import tomllib
import warnings
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import gym

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
_NOT_FOUND = object()


def _load(path: Path, name: str) -> ModuleType:
    """A module from a file that is not in a package (tests/, scripts/)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module


@cache
def layers() -> dict[int, tuple[str, ...]]:
    return _load(ROOT / "tests" / "test_layers.py", "_layers_of_test_layers").LAYERS


def table(doc: Path, heading: str, first_column: str) -> list[list[str]]:
    """The rows (cells) of the first table under ``heading`` whose header starts so."""
    text = doc.read_text().split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    rows: list[list[str]] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if line.startswith("|")]
        if lines and lines[0].strip("| ").startswith(first_column):
            rows = [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines[2:]]
            break
    assert rows, f"{doc.name}: no table headed {first_column!r} under {heading!r}"
    return rows


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def resolve(dotted: str) -> Any:
    """The object a dotted ``gym.`` name stands for: the longest importable module, then
    attributes; `_NOT_FOUND` if there is none."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            found = getattr(found, attr, _NOT_FOUND)
            if found is _NOT_FOUND:
                return _NOT_FOUND
        return found
    return _NOT_FOUND


# -- the layers -------------------------------------------------------------------------


def documented_layers() -> dict[int, tuple[list[str], list[str]]]:
    """Layer -> (its packages, its front doors), as docs/architecture.md's table says."""
    return {
        int(row[0]): (ticked(row[1]), ticked(row[3]))
        for row in table(ARCHITECTURE, "## The layers", "layer")
    }


def is_package(name: str) -> bool:
    return name == "gym" or (ROOT / Path(*name.split(".")) / "__init__.py").is_file()


def test_the_layer_table_lists_the_packages_of_test_layers():
    expected = {
        layer: sorted(e for e in entries if is_package(e)) for layer, entries in layers().items()
    }
    found = {layer: sorted(packages) for layer, (packages, _) in documented_layers().items()}
    assert found == expected, (
        "docs/architecture.md's layer table and tests/test_layers.py's LAYERS disagree: "
        "give each layer the packages LAYERS gives it"
    )


def test_the_layer_table_names_every_public_module():
    public = {e for entries in layers().values() for e in entries if not is_package(e)}
    doors = {
        d
        for _, (_, found) in documented_layers().items()
        for d in found
        if re.fullmatch(r"gym(\.\w+)*", d)  # not the commands (`gym view`)
    }
    assert public <= doors, f"front doors missing from the layer table: {sorted(public - doors)}"
    stale = sorted(d for d in doors if d.startswith("gym") and resolve(d) is _NOT_FOUND)
    assert not stale, f"the layer table names front doors that do not exist: {stale}"


# -- the families -----------------------------------------------------------------------


def family_folders() -> dict[str, list[str]]:
    """environments/<folder>/ -> the ids its boxgym.toml registers."""
    found = {}
    for toml in sorted((ROOT / "environments").glob("*/boxgym.toml")):
        found[toml.parent.name] = [e["id"] for e in tomllib.loads(toml.read_text())["env"]]
    return found


def test_the_families_table_lists_every_family_and_id():
    rows = table(ARCHITECTURE, "## The families", "family")
    folders = {ticked(row[1])[0].split("/")[1]: ticked(row[2]) for row in rows}
    assert folders == family_folders(), (
        "docs/architecture.md's families table: one row per environments/<folder>/boxgym.toml, "
        "with the ids it registers"
    )
    assert {i for ids in folders.values() for i in ids} <= set(gym.env_ids())


def test_the_families_table_names_each_class_and_final_state():
    for row in table(ARCHITECTURE, "## The families", "family"):
        name, base = re.fullmatch(r"(\w+)\((\w+)\)", ticked(row[3])[0]).groups()  # type: ignore[union-attr]
        cls = gym.authoring.env_class(ticked(row[2])[0])  # a declared one's too
        assert cls.__name__ == name, f"{ticked(row[2])[0]} builds {cls.__name__}, not {name}"
        bases = {c.__name__ for c in cls.__mro__}
        assert base in bases, f"{name} is not a {base}"
        assert cls.final_state_type.__name__ == ticked(row[4])[0], f"{name}'s final state"


# -- paths and names in README.md and docs/ --------------------------------------------

_PATH = re.compile(
    r"(?<![\w./-])((?:gym|environments|tests|scripts|bench|images|seeds|docs)/[\w./-]*\w/?)"
)
_NAME = re.compile(r"`(gym(?:\.\w+)+)")
EXAMPLES = {
    "environments/my_env/",  # docs/authoring.md: the family a reader makes
    "environments/my_env/boxgym.toml",
    "images/my_env/",
    "seeds/my_env/",
    "seeds/my_env/example/",
    "seeds/notes/",  # docs/authoring.md: the tool-API family a reader makes
    "seeds/concerts/",  # docs/authoring.md: the SQL family a reader makes
    "images/logs/",  # docs/authoring.md: the declaration's example
    "seeds/logs/",
    "seeds/bad/wrong/task.toml",  # docs/authoring.md: an error message's example
    "tests/test_core.py",  # docs/graders/trajectory.md: a task's test file, in its repo
    "tests/test_x.py",  # docs/viewer.md: a flag's detail
    "bench/.trl-site",  # docs/benchmarks.md: made (git-ignored) when that benchmark runs
}
"""Paths the docs name as examples or as what a command makes, not as files of the repo."""


def renamed_rows() -> list[list[str]]:
    return table(ARCHITECTURE, "## Names", "old name")


def test_every_path_the_docs_name_exists():
    missing = []
    for doc in DOCS:
        text = re.sub(r"\]\([^)]*\)", "]", doc.read_text())  # links: test_links checks them
        for path in sorted(set(_PATH.findall(text))):
            if "<" not in path and path not in EXAMPLES and not (ROOT / path).exists():
                missing.append(f"{doc.relative_to(ROOT)}: {path}")
    assert not missing, "paths named in the docs that do not exist:\n" + "\n".join(missing)


def test_every_gym_name_the_docs_use_resolves_without_a_warning():
    """A line that says "deprecated" may name an old name: it must still resolve."""
    old = {ticked(row[0])[0] for row in renamed_rows()}
    bad = []
    for doc in DOCS:
        for line in doc.read_text().splitlines():
            for name in sorted(set(_NAME.findall(line))):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    found = resolve(name)
                warned = any(issubclass(w.category, DeprecationWarning) for w in caught)
                said = name in old or "deprecat" in line.lower()
                if found is _NOT_FOUND or (warned and not said):
                    bad.append(f"{doc.relative_to(ROOT)}: {name}")
    assert not bad, "names in the docs that are gone or deprecated:\n" + "\n".join(bad)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def test_every_relative_link_of_the_docs_leads_somewhere():
    broken = []
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
            if re.match(r"\w+://|mailto:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            if not file.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
            elif anchor and file.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", file.read_text(), re.M)
                if anchor not in {slug(h) for h in headings}:
                    broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)


def test_the_path_and_name_readers_see_what_they_must():
    assert _PATH.findall("see gym/_sandbox/_once.py, and `environments/sql/`.") == [
        "gym/_sandbox/_once.py",
        "environments/sql/",
    ]
    assert _NAME.findall("`gym.runs.run(config)` and `gym.ContainerEnv[S]`") == [
        "gym.runs.run",
        "gym.ContainerEnv",
    ]
    assert resolve("gym.runs.write_records") is gym.runs.write_records
    assert resolve("gym._core._models.no_such_name") is _NOT_FOUND
    assert slug("## One machine: where a container's cost goes"[3:]) == (
        "one-machine-where-a-containers-cost-goes"
    )


# -- the names table ----------------------------------------------------------------------


@pytest.mark.parametrize("row", renamed_rows(), ids=lambda row: ticked(row[0])[0])
def test_a_renamed_name_resolves_to_its_new_name(row):
    (old,), (new,), status = ticked(row[0]), ticked(row[1]), row[2]
    assert status in ("warns", "alias"), f"{old}: the table says {status!r}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = resolve(old)
    assert value is not _NOT_FOUND, f"{old} no longer resolves"
    assert value is resolve(new), f"{old} is not {new}"
    warned = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    if status == "warns":
        assert warned and new.rsplit(".", 1)[1] in str(warned[0].message)
    else:
        assert not warned, f"{old} warns: mark it 'warns' in docs/architecture.md"


def test_the_names_table_gives_each_word_one_meaning():
    words = [row[0] for row in table(ARCHITECTURE, "## Names", "word")]
    assert len(words) == len(set(words))
    assert {"judge", "runner", "run", "export", "task files", "role"} <= set(words)


def test_the_checker_is_no_judge():
    """The in-container test process is the checker; "judge" is the LLM judge alone."""
    from gym._grading._checks import RUNNER_PATH

    shipped = sorted(p.name for p in RUNNER_PATH.parent.glob("boxgym_*.py"))
    assert "boxgym_checker.py" in shipped and not [n for n in shipped if "judge" in n]
    for path in RUNNER_PATH.parent.glob("boxgym_*.py"):
        assert not re.search(r"\bjudge", path.read_text(), re.I), f"{path.name} says judge"


# -- the figure ---------------------------------------------------------------------------


def test_the_page_shows_the_figure_and_it_names_each_process():
    assert "](episode.svg)" in ARCHITECTURE.read_text()
    svg = ET.parse(ROOT / "docs" / "episode.svg").getroot()
    assert svg.get("viewBox"), "GitHub scales an SVG by its viewBox"
    texts = " ".join(t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}text"))
    steps = ARCHITECTURE.read_text().split("## One episode", 1)[1].split("\n## ", 1)[0]
    for process in re.findall(r"\*\*([^*]+)\*\*", steps):
        assert process in texts, f"docs/episode.svg does not show the {process}"


def test_the_figure_is_what_the_script_draws(tmp_path):
    pytest.importorskip("matplotlib")
    script = _load(ROOT / "scripts" / "episode_figure.py", "_episode_figure")
    try:
        assert script.main([str(tmp_path / "episode.svg")]) == 0
    finally:
        sys.modules.pop("_episode_figure", None)
    drawn, committed = tmp_path / "episode.svg", ROOT / "docs" / "episode.svg"
    assert drawn.read_bytes() == committed.read_bytes(), (
        "docs/episode.svg is stale: run .venv/bin/python scripts/episode_figure.py"
    )
