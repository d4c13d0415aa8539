"""The one-commit repository written without git is the one git makes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gym._core._git import one_commit

WHO, WHEN = "boxgym <tasks@boxgym.invalid>", "1767225600 +0000"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "boxgym",
    "GIT_AUTHOR_EMAIL": "tasks@boxgym.invalid",
    "GIT_COMMITTER_NAME": "boxgym",
    "GIT_COMMITTER_EMAIL": "tasks@boxgym.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_SYSTEM": "/dev/null",
}
FILES = {
    "a.b": b"dot\n",
    "a/x.py": b"x = 1\n",
    "a-b": b"dash\n",
    "a/b/deep.txt": b"deep\n" * 100,
    "README.md": b"",
    "z": bytes(range(256)),
}


def write(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("files", [FILES, {"only.py": b"pass\n"}])
def test_the_commit_is_the_one_git_makes_and_the_tree_is_clean(tmp_path, files):
    real = tmp_path / "real"
    write(real, files)
    git(real, "init", "-q", "-b", "main")
    git(real, "add", "-A")
    git(real, "commit", "-q", "-m", "base")
    ours = tmp_path / "ours"
    write(ours, {**files, **one_commit(files, who=WHO, when=WHEN)})
    assert git(ours, "rev-parse", "HEAD") == git(real, "rev-parse", "HEAD")
    assert git(ours, "status", "--porcelain") == ""
    git(ours, "fsck", "--strict")
    assert git(ours, "log", "--format=%an %s") == "boxgym base\n"
