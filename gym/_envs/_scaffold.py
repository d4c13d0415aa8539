"""`gym env new`: scaffold an environment, its image and a working example task."""

from __future__ import annotations

import json
import re
from pathlib import Path

from gym._core._errors import ConfigError
from gym._core._paths import project_root
from gym._envs._declare import CODE_BASE
from gym._envs._registry import Template, check_folder_id, templates

__all__ = ["class_name", "families", "scaffold"]

NAME = re.compile(r"^[a-z][a-z0-9_]{1,40}$")
NAME_RULE = "2 to 41 characters: a lowercase letter, then lowercase letters, digits or _"
"""`NAME`, as a refusal states it."""
CODE = CODE_BASE
"""The family word of a plain `CodeEnv` project (the one the scaffold writes itself)."""


def families() -> tuple[str, ...]:
    """The ``--family`` words: ``code``, then each registered family's ``[template]``."""
    return (CODE, *sorted(w for w in templates() if w != CODE))


DERIVED_README = """# {Title}

`{env_id}`: created with `gym env new {name} --family {family}`, on top of
`{base_module}.{base_class}` (its README documents the tools, the grading and the flags).
Edit this file as the environment grows.

## Description

The image in `images/{name}/` (a copy of the bundled one, or built on it: change or add to
it freely) with the tasks in `seeds/{name}/`.

## Actions

The tools of `{base_class}`: see `info["tools"]` after `reset`.

## Observations

Text: the task prompt after `reset`, then each tool's result.

## Reward

1.0 when the final state matches the gold solution replayed in a fresh grading container
and no forbidden side effect is flagged; 0.0 otherwise. Infrastructure failures raise
`gym.InfraError` instead of giving a reward.

## Episode End

`submit` terminates the episode; the step budget (30) or time budget (1800 s)
truncates it. Both are graded.

## Arguments

`gymnasium.make("{env_id}", max_steps=N, max_seconds=S, ...)`, plus those of
`{base_class}`.

## Version History

- v0: initial version.
"""

MANIFEST = """# The environments of this folder, registered when `import gym` runs. {Title} is a
# declaration alone, on the {base} family (docs/authoring.md, "Declaring an environment"):
# its tools, final state and grader are the family's; its tasks are in seeds/{name}/ and
# its image in images/{name}/. Add system_prompt, tools, drop_tools, sandbox or splits as
# the environment needs them; it needs no Python.
[[env]]
id = {env_id_toml}
base = {base_toml}
tasks = {name_toml}
image = {name_toml}
max_steps = 30
max_seconds = 1800
"""

README = """# {Title}

`{env_id}`: created with `gym env new {name} --family code`. Edit this file as the
environment grows.

## Description

A small Python project is copied into `/workspace` (with a one-commit git history); the
agent must change it so that the task's hidden tests pass.

## Actions

OpenAI-style tool calls: `bash(command)`, `read_file(path)`, `write_file(path, content)`,
`submit()`. The JSON schemas are in `info["tools"]` after `reset`.

## Observations

Text: the task prompt after `reset`, then each tool's output (stdout, stderr, exit code;
long output is cut with an explicit marker).

## Reward

1.0 when every hidden and visible test passes in a fresh grading container and no
forbidden side effect is flagged (changes outside `allowed_paths`, touched tests,
planted hooks...); 0.0 otherwise. Infrastructure failures raise `gym.InfraError`
instead of giving a reward.

## Episode End

`submit()` terminates the episode; the step budget (30) or time budget (1800 s)
truncates it. Both are graded.

## Arguments

`gymnasium.make("{env_id}", split=None, exec_timeout=60, max_output=16384)`;
`gym.make(..., max_steps=N, max_seconds=S)` overrides the budgets.

## Version History

- v0: initial version.
"""

DOCKERFILE = """# Toolchain image of {name}: never put tasks, tests or solutions here (gym checks).
FROM debian:bookworm-slim
RUN apt-get update \\
 && apt-get install -y --no-install-recommends python3 python3-pytest git ca-certificates procps \\
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/* \\
 && useradd --uid 1000 --create-home --shell /bin/bash agent \\
 && git config --system init.defaultBranch main \\
 && git config --system safe.directory '*'
ENV LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0 TZ=UTC
WORKDIR /workspace
"""

TASK_TOML = '''id = "example"
split = "train"
allowed_paths = ["calc/**"]
prompt = """
The `calc` package in /workspace has a bug: `mean([])` raises ZeroDivisionError. It
should return 0.0 for an empty list. Fix calc/stats.py without changing the tests, then
call submit.
"""

[tags]
difficulty = "easy"
skill = "bugfix"

[grading]
kind = "pytest"
visible_tests = ["tests/test_stats.py"]
python_paths = ["."]
'''

REPO_STATS = '''"""Small statistics."""


def mean(values):
    """The arithmetic mean of values."""
    return sum(values) / len(values)
'''

ORACLE_STATS = '''"""Small statistics."""


def mean(values):
    """The arithmetic mean of values (0.0 for no values)."""
    if not values:
        return 0.0
    return sum(values) / len(values)
'''

VISIBLE_TEST = """from calc.stats import mean


def test_mean_of_numbers():
    assert mean([1, 2, 3]) == 2
"""

HIDDEN_TEST = """from calc.stats import mean


def test_mean_of_nothing_is_zero():
    assert mean([]) == 0.0


def test_mean_still_works():
    assert mean([2, 4]) == 3
"""


def class_name(name: str) -> str:
    """``my_env`` -> ``MyEnv``."""
    return "".join(part.capitalize() for part in name.split("_")) + "Env"


def _copy_tree(src: Path, dst: Path) -> list[Path]:
    written = []
    for path in sorted(src.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            target = dst / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
            target.chmod(path.stat().st_mode & 0o777)
            written.append(target)
    return written


EXTENDED_DOCKERFILE = """\
# The image of {name}: built on the bundled boxgym/{image} (its service and tools
# follow the bundled image's). Add what this family needs below (packages, files);
# never tasks, tests or solutions (gym checks every build context).
FROM boxgym/{image}
"""


def _image(name: str, template: Template, base: Path) -> list[Path]:
    """The new family's image folder: built on the family's image, or a copy of it."""
    if not template.extend_image:
        return _copy_tree(template.root / "images" / template.image, base / "images" / name)
    target = base / "images" / name / "Dockerfile"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(EXTENDED_DOCKERFILE.format(name=name, image=template.image))
    return [target]


def _derived(name: str, template: Template, env_id: str, base: Path) -> list[Path]:
    """An environment on top of a registered family: its declaration, its image and a task."""
    fields = {
        "name": name,
        "Class": class_name(name),
        "env_id": env_id,
        "family": template.word,
        "Title": class_name(name).removesuffix("Env"),
        "base_module": template.module,
        "base_class": template.cls,
        "base": template.word,
    }
    fields |= _toml_fields(fields)
    texts = {
        f"environments/{name}/boxgym.toml": MANIFEST.format(**fields),
        f"environments/{name}/README.md": DERIVED_README.format(**fields),
    }
    written = []
    for rel, content in texts.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(content)
        written.append(base / rel)
    source = template.root
    written += _image(name, template, base)
    written += _copy_tree(source / "seeds" / template.example, base / "seeds" / name / "example")
    for rel in template.seeds:
        target = base / "seeds" / name / Path(rel).name
        target.write_bytes((source / "seeds" / rel).read_bytes())
        written.append(target)
    return written


def _toml_fields(fields: dict[str, str]) -> dict[str, str]:
    """The values the manifest writes, as TOML strings (``env_id_toml``...).

    A JSON string is a valid TOML basic string, so quotes, backslashes and newlines in a
    value stay inside it.
    """
    return {f"{key}_toml": json.dumps(fields[key]) for key in ("env_id", "base", "name")}


def _files(name: str, env_id: str) -> dict[str, str]:
    fields = {
        "name": name,
        "Class": class_name(name),
        "env_id": env_id,
        "Title": class_name(name).removesuffix("Env"),
        "base": CODE,
    }
    fields |= _toml_fields(fields)
    task = f"seeds/{name}/example"
    return {
        f"environments/{name}/boxgym.toml": MANIFEST.format(**fields),
        f"environments/{name}/README.md": README.format(**fields),
        f"images/{name}/Dockerfile": DOCKERFILE.format(**fields),
        f"{task}/task.toml": TASK_TOML,
        f"{task}/repo/calc/__init__.py": '"""A tiny calculator package."""\n',
        f"{task}/repo/calc/stats.py": REPO_STATS,
        f"{task}/repo/tests/test_stats.py": VISIBLE_TEST,
        f"{task}/oracle/calc/stats.py": ORACLE_STATS,
        f"{task}/hidden/test_stats_hidden.py": HIDDEN_TEST,
    }


def scaffold(
    name: str, *, family: str = "code", env_id: str | None = None, root: Path | None = None
) -> list[Path]:
    """Create environments/NAME, images/NAME and seeds/NAME with a working example task.

    Args:
        name: folder name (`NAME_RULE`).
        family: ``code`` (a Python project), or the word of a registered family's
            ``[template]`` (its boxgym.toml): the new environment is declared on that
            family (``base``), with an image built on or copied from the family's and one
            of its tasks (`families` lists the words).
        env_id: the id to register (``boxgym/<Name>-v0`` by default).
        root: the project root (the current one by default).

    Returns:
        The files written.

    Raises:
        ConfigError: a bad name or id, an id another package or folder holds, an unknown
            family, or folders that already exist (nothing is written then).
    """
    if not NAME.match(name):
        raise ConfigError(f"environment name {name!r}: use {NAME_RULE} (e.g. my_env)")
    if family not in families():
        raise ConfigError(
            f"family {family!r} is not one of {', '.join(families())} (a family offers "
            "itself with a [template] table in its boxgym.toml)"
        )
    base = root or project_root()
    env_id = env_id or f"boxgym/{class_name(name).removesuffix('Env')}-v0"
    check_folder_id(env_id, base / "environments" / name)
    taken = [
        d
        for d in (f"environments/{name}", f"images/{name}", f"seeds/{name}")
        if (base / d).exists()
    ]
    if taken:
        raise ConfigError(f"{', '.join(taken)} already exist(s); pick another name")
    if family != CODE:
        return _derived(name, templates()[family], env_id, base)
    written = []
    for rel, content in _files(name, env_id).items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        written.append(path)
    return written
