"""Task folders are read as regular files inside them: a link is refused, never followed."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from gym._core._errors import ConfigError
from gym._core._models import Task, hash_tree, load_tasks
from gym._core._tree import read_inside, read_regular, read_tree
from gym._grading._code import workspace_files

SECRET = "assert add(2, 2) == 4  # the hidden test\n"


def make_task(seeds: Path, name: str) -> Path:
    """A code task of family ``fam``: a prompt, repo/, oracle/ and hidden/."""
    folder = seeds / "fam" / name
    for rel, text in {
        "task.toml": f'id = "{name}"\nprompt = "Fix add."\n',
        "repo/calc.py": "def add(a, b):\n    return a - b\n",
        "oracle/calc.py": "def add(a, b):\n    return a + b\n",
        "hidden/test_calc.py": SECRET,
    }.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def task_of(folder: Path) -> Task:
    return Task(id=folder.name, family="fam", prompt="Fix add.", path=str(folder))


@pytest.mark.parametrize(
    ("link", "target"),
    [
        ("repo/notes.py", "../hidden/test_calc.py"),  # the hidden test, into the workspace
        ("repo/sub", "../hidden"),  # a folder of hidden tests
        ("oracle/extra.py", "../hidden/test_calc.py"),
        ("hidden/test_more.py", "OUTSIDE"),  # a host file, graded as a hidden test
        ("prompt.md", "OUTSIDE"),
        ("tools.json", "OUTSIDE"),
    ],
)
def test_a_task_holding_a_link_is_a_problem_and_its_family_still_loads(
    tmp_path: Path, link: str, target: str
) -> None:
    outside = tmp_path / "host.txt"
    outside.write_text("host secret\n")
    bad = make_task(tmp_path, "bad")
    make_task(tmp_path, "good")
    (bad / link).parent.mkdir(parents=True, exist_ok=True)
    (bad / link).symlink_to(outside if target == "OUTSIDE" else target)
    tasks = load_tasks(tmp_path, "fam")
    assert [t.id for t in tasks] == ["good"]
    (problem,) = tasks.problems
    assert f"{bad}: {link} is a symbolic link" in problem
    assert "read only as regular files inside the task folder; replace it by the file" in problem


@pytest.mark.parametrize("link", ["repo", "hidden", "task.toml"])
def test_a_linked_folder_or_spec_is_a_problem(tmp_path: Path, link: str) -> None:
    elsewhere = make_task(tmp_path / "other", "elsewhere")
    bad = make_task(tmp_path, "bad")
    target = bad / link
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    target.symlink_to(elsewhere / link)
    tasks = load_tasks(tmp_path, "fam")
    assert list(tasks) == [] and f"{bad}: {link} is a symbolic link" in tasks.problems[0]


def test_a_linked_task_folder_is_a_problem(tmp_path: Path) -> None:
    elsewhere = make_task(tmp_path / "other", "elsewhere")
    (tmp_path / "fam").mkdir()
    (tmp_path / "fam" / "linked").symlink_to(elsewhere)
    tasks = load_tasks(tmp_path, "fam")
    assert list(tasks) == [] and "linked is a symbolic link" in tasks.problems[0]


def test_a_linked_hidden_test_never_reaches_the_workspace(tmp_path: Path) -> None:
    folder = make_task(tmp_path, "t")
    (folder / "repo" / "notes.py").symlink_to("../hidden/test_calc.py")
    with pytest.raises(ConfigError, match="notes.py is a symbolic link"):
        workspace_files(task_of(folder))
    with pytest.raises(ConfigError, match="notes.py is a symbolic link"):
        workspace_files(task_of(folder), with_git=False)


def test_a_linked_folder_is_not_walked_into(tmp_path: Path) -> None:
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / "test_x.py").write_text(SECRET)
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.py").write_text("a = 1\n")
    assert read_tree(tmp_path / "repo") == {"a.py": b"a = 1\n"}
    (tmp_path / "repo" / "sub").symlink_to(tmp_path / "hidden")
    with pytest.raises(ConfigError, match="sub is a symbolic link"):
        read_tree(tmp_path / "repo")
    (tmp_path / "repo" / "sub").unlink()
    (tmp_path / "linked").symlink_to(tmp_path / "hidden")
    with pytest.raises(ConfigError, match="linked is a symbolic link"):
        read_tree(tmp_path / "linked")


def test_links_in_files_are_kept_and_never_followed(tmp_path: Path) -> None:
    """The shell family copies files/ with its links as links: the task loads."""
    folder = make_task(tmp_path, "t")
    (folder / "files").mkdir()
    (folder / "files" / "gold").symlink_to("../hidden/test_calc.py")
    (folder / "files" / "etc").symlink_to("/etc")
    assert [t.id for t in load_tasks(tmp_path, "fam")] == ["t"]
    before = hash_tree(folder / "files")
    (folder / "hidden" / "test_calc.py").write_text("changed\n")
    assert hash_tree(folder / "files") == before  # the link's text counts, not its target
    (folder / "files" / "gold").unlink()
    (folder / "files" / "gold").symlink_to("elsewhere")
    assert hash_tree(folder / "files") != before


def test_a_tree_of_regular_files_hashes_as_before(tmp_path: Path) -> None:
    folder = make_task(tmp_path, "t")
    (folder / "repo" / "pkg").mkdir()
    (folder / "repo" / "pkg" / "a.py").write_text("x = 1\n")
    (folder / "repo" / "pkg.txt").write_text("text\n")
    h = hashlib.sha256()  # the hash every stored task's hidden_hash was made with
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(file.relative_to(folder).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(file.read_bytes()).digest())
    assert hash_tree(folder) == h.hexdigest()
    assert hash_tree(tmp_path / "absent") == ""


def test_read_regular_refuses_a_link(tmp_path: Path) -> None:
    (tmp_path / "real.md").write_text("hello")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")
    assert read_regular(tmp_path / "real.md") == b"hello"
    with pytest.raises(ConfigError, match="link.md is a symbolic link"):
        read_regular(tmp_path / "link.md")


def family(tmp_path: Path) -> Path:
    """A family's folder with a shared file two levels down, and a file outside it."""
    (tmp_path / "fam" / "shared").mkdir(parents=True)
    (tmp_path / "fam" / "shared" / "data.sql").write_text("inside")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "data.sql").write_text(SECRET)
    return tmp_path / "fam"


def test_read_inside_reads_a_regular_file_below_the_root(tmp_path: Path) -> None:
    root = family(tmp_path)
    assert read_inside(root, "shared/data.sql") == b"inside"
    (tmp_path / "root-link").symlink_to(root)  # the root itself is opened as named
    assert read_inside(tmp_path / "root-link", "shared/data.sql") == b"inside"
    with pytest.raises(FileNotFoundError):
        read_inside(root, "shared/absent.sql")


@pytest.mark.parametrize("swapped", ["shared/data.sql", "shared"])
def test_read_inside_refuses_a_link_on_the_way(tmp_path: Path, swapped: str) -> None:
    root = family(tmp_path)
    target = tmp_path / "elsewhere" / ("data.sql" if swapped.endswith(".sql") else "")
    path = root / swapped
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
    path.symlink_to(target)
    with pytest.raises(ConfigError) as exc:
        read_inside(root, "shared/data.sql")
    assert f"{root}/{swapped} is a symbolic link" in str(exc.value)
    assert "replace it by the file" in str(exc.value) and SECRET not in str(exc.value)


@pytest.mark.parametrize("rel", ["../elsewhere/data.sql", "/etc/hostname", "shared//data.sql", ""])
def test_read_inside_takes_only_a_plain_relative_path(tmp_path: Path, rel: str) -> None:
    with pytest.raises(ConfigError, match="relative and without '..'"):
        read_inside(family(tmp_path), rel)


def test_read_inside_refuses_a_fifo(tmp_path: Path) -> None:
    root = family(tmp_path)
    os.mkfifo(root / "shared" / "pipe.sql")
    with pytest.raises(ConfigError, match="pipe.sql is not a regular file"):
        read_inside(root, "shared/pipe.sql")
