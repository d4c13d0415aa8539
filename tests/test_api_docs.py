"""docs/api.md lists exactly the public surface: every module's `__all__`, one line a name."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api.md"


def documented() -> dict[str, list[str]]:
    """Module -> the names docs/api.md lists under its ``## `module` `` heading, in order."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in API.read_text().splitlines():
        if heading := re.fullmatch(r"## `(gym(?:\.\w+)?)`", line):
            current = sections.setdefault(heading.group(1), [])
        elif (item := re.match(r"- `(\w+)`: \S", line)) and current is not None:
            current.append(item.group(1))
    return sections


def test_every_public_module_has_a_section():
    """gym and every module or package of gym/ without a leading underscore."""
    modules = sorted(
        ["gym"]
        + [
            f"gym.{p.stem}"
            for p in (ROOT / "gym").iterdir()
            if not p.name.startswith("_") and (p.suffix == ".py" or (p / "__init__.py").is_file())
        ]
    )
    assert sorted(documented()) == modules


@pytest.mark.parametrize("module", sorted(documented()))
def test_a_section_lists_the_module_all(module):
    listed = documented()[module]
    exported = importlib.import_module(module).__all__
    assert len(listed) == len(set(listed)), f"{module}: a name is listed twice in docs/api.md"
    missing, extra = sorted(set(exported) - set(listed)), sorted(set(listed) - set(exported))
    assert not missing and not extra, (
        f"docs/api.md, section {module}: add a line for {missing}, remove the lines of {extra}"
    )


def test_the_reader_sees_what_it_must():
    sections = documented()
    assert sections["gym"][:2] == ["CodeEnv", "Component"]
    assert "ExportTooLarge" in sections["gym.errors"]
