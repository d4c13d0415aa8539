"""What a family declares about itself: its kind, its attacks, its scaffold template, and
the changes its final state shows (`ContainerEnv.changes`)."""

from __future__ import annotations

import textwrap
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from forget import forget
from toy_env import ENV_ID as TOY

import gym
import gym.authoring
from gym._envs import _registry
from gym._envs._scaffold import families, scaffold
from gym.errors import ConfigError
from gym.grading import Export
from gym.sandbox import Change

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """A project root for one family folder; whatever it registers is forgotten after."""
    before = set(_registry._ids), set(_registry._broken), set(_registry._templates)
    yield tmp_path
    forget(set(_registry._ids) - before[0])
    for key in set(_registry._broken) - before[1]:
        del _registry._broken[key]
    for word in set(_registry._templates) - before[2]:
        del _registry._templates[word]


def manifest(root: Path, name: str, text: str) -> None:
    (root / "environments" / name).mkdir(parents=True)
    (root / "environments" / name / "boxgym.toml").write_text(textwrap.dedent(text))
    (root / "environments" / name / "__init__.py").write_text("")


def test_a_manifest_declares_kind_and_attacks_for_its_environments(folder):
    manifest(
        folder,
        "demo",
        """
        kind = "demo-kind"
        attacks = "attacks"
        [[env]]
        id = "demo/One-v0"
        class = "OneEnv"
        [[env]]
        id = "demo/Two-v0"
        class = "TwoEnv"
        kind = "other"
        """,
    )
    assert gym.authoring.register_local(folder) == ["demo/One-v0", "demo/Two-v0"]
    assert _registry.kind_of("demo/One-v0") == "demo-kind"
    assert _registry.kind_of("demo/Two-v0") == "other"  # an [[env]] may say its own
    assert _registry.attack_modules(bundled=False) == ["boxgym_local.demo.attacks"]
    assert _registry.kind_of(TOY) == TOY  # declared none: a kind of its own


@pytest.mark.parametrize(
    ("line", "word"),
    [('attacks = "no such module"', "attacks"), ('kind = ""', "kind"), ("kind = 3", "kind")],
)
def test_a_bad_kind_or_attacks_breaks_its_folder_alone(folder, line, word):
    manifest(folder, "bad", f'{line}\n[[env]]\nid = "bad/Env-v0"\nclass = "BadEnv"\n')
    assert gym.authoring.register_local(folder) == []
    (problem,) = [p for source, p in _registry._broken.items() if str(folder) in source]
    assert word in problem and "bad" in problem
    assert "boxgym/PyFunc-v0" in gym.env_ids()


def test_python_registration_takes_kind_and_attacks(folder):
    gym.register("demo/Py-v0", "environments.mbpp:MBPPEnv", kind="code", attacks="demo.att")
    assert _registry.kind_of("demo/Py-v0") == "code"
    assert _registry.attack_modules(bundled=False) == ["demo.att"]
    with pytest.raises(ConfigError, match="importable module name"):
        gym.register("demo/Py2-v0", "environments.mbpp:MBPPEnv", attacks="../x")


# -- the scaffold builds on the families that offer a template --------------------------------


def test_the_scaffold_offers_the_templates_the_manifests_declare():
    assert families() == ("code", "api", "shell", "sql", "toolapi")
    assert _registry.templates()["sql"].module == "environments.sql"


def test_a_projects_family_offers_itself_to_the_scaffold(folder, tmp_path_factory):
    manifest(
        folder,
        "notes",
        """
        [[env]]
        id = "demo/Notes-v0"
        class = "NotesEnv"
        [template]
        word = "notes"
        class = "NotesEnv"
        image = "notes"
        example = "notes/first"
        """,
    )
    (folder / "images" / "notes").mkdir(parents=True)
    (folder / "images" / "notes" / "Dockerfile").write_text("FROM scratch\n")
    (folder / "seeds" / "notes" / "first").mkdir(parents=True)
    (folder / "seeds" / "notes" / "first" / "task.toml").write_text('prompt = "x"\n')
    gym.authoring.register_local(folder)
    assert "notes" in families()
    target = tmp_path_factory.mktemp("project")
    written = {
        p.relative_to(target).as_posix() for p in scaffold("mine", family="notes", root=target)
    }
    assert {"images/mine/Dockerfile", "seeds/mine/example/task.toml"} <= written
    declared = tomllib.loads((target / "environments" / "mine" / "boxgym.toml").read_text())
    assert declared["env"] == [
        {
            "id": "boxgym/Mine-v0",
            "base": "notes",
            "tasks": "mine",
            "image": "mine",
            "max_steps": 30,
            "max_seconds": 1800,
        }
    ]
    assert not (target / "environments" / "mine" / "__init__.py").exists()  # no Python
    with pytest.raises(ConfigError, match="is not one of code, "):
        scaffold("other", family="nope", root=target)


def test_a_template_missing_a_key_breaks_its_folder(folder):
    manifest(folder, "half", '[[env]]\nid = "half/E-v0"\nclass = "E"\n[template]\nword = "x"\n')
    gym.authoring.register_local(folder)
    (problem,) = [p for source, p in _registry._broken.items() if str(folder) in source]
    assert "[template]" in problem and "x" not in families()
    assert "half/E-v0" not in gym.env_ids()  # nothing of a broken folder registers


# -- changes: what the viewer shows -----------------------------------------------------------


def test_a_code_family_shows_files_against_the_tasks_project():
    env = gym.authoring.env_of(gym.make(TOY))
    task = env.task_by_id("greet")
    export = Export(
        files={"answer.txt": b"hello\n", "new.txt": b"x"},
        changes=[
            Change(path="/workspace/answer.txt", kind="modified"),
            Change(path="/workspace/new.txt", kind="added"),
            Change(path="/workspace/tests/t.py", kind="modified"),
        ],
        links=["new.txt"],
    )
    changes = env.changes(task, export)
    assert [(f.path, f.before, f.after) for f in changes.files] == [
        (
            "answer.txt",
            (ROOT / "tests/toy_seeds/toy/greet/repo/answer.txt").read_bytes(),
            b"hello\n",
        ),
        ("new.txt", None, b"x"),
    ]
    assert changes.outside == ["modified /workspace/tests/t.py"]
    assert changes.note == "links graded as copies of their files: new.txt"
    over = env.changes(task, Export(oversized=True))
    assert over.files == [] and "over the export cap" in over.note


def test_a_family_shows_no_changes_by_default():
    env = gym.authoring.env_of(gym.make("boxgym/Learn-v0"))
    state = env.final_state_type()
    assert env.changes(env.tasks[0], state) is None


def test_a_family_that_extends_its_image_scaffolds_an_image_built_on_it(tmp_path):
    # toolapi and shell declare `extend_image`: the new image follows the bundled service
    assert _registry.templates()["toolapi"].extend_image
    assert not _registry.templates()["sql"].extend_image
    written = {
        p.relative_to(tmp_path).as_posix()
        for p in scaffold("mine", family="toolapi", root=tmp_path)
    }
    assert [p for p in written if p.startswith("images/")] == ["images/mine/Dockerfile"]
    lines = (tmp_path / "images" / "mine" / "Dockerfile").read_text().splitlines()
    assert [line for line in lines if not line.startswith("#")] == ["FROM boxgym/toolapi"]
    copied = {
        p.relative_to(tmp_path).as_posix() for p in scaffold("theirs", family="sql", root=tmp_path)
    }
    assert (
        "images/theirs/Dockerfile" in copied
        and len([p for p in copied if p.startswith("images/")]) > 1
    )
