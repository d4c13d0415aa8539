"""Images built on a bundled image by name: ``FROM boxgym/<name>`` in an image's Dockerfile."""

from __future__ import annotations

import contextlib
import hashlib

import pytest

import gym
import gym.images
from gym._sandbox import _images
from gym._sandbox._images import base_images, context_hash, resolved_dockerfile


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project with an image ``base`` and an image ``child`` built on it by name."""
    for name, dockerfile in {
        "base": "FROM debian:bookworm-slim\nRUN echo one > /marker\n",
        "child": "# built on the bundled base\nFROM boxgym/base\nRUN cat /marker > /copied\n",
    }.items():
        (tmp_path / "images" / name).mkdir(parents=True)
        (tmp_path / "images" / name / "Dockerfile").write_text(dockerfile)
    monkeypatch.setenv("GYM_ROOT", str(tmp_path))
    monkeypatch.setenv("GYM_DATA", str(tmp_path / "data"))
    monkeypatch.setattr(_images, "_resolved", {})
    return tmp_path


def _legacy_hash(folder):
    """The context hash as it was before bases were hashed (an image with none keeps it)."""
    h = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = file.relative_to(folder).as_posix()
        h.update(rel.encode() + b"\0" + (b"x" if file.stat().st_mode & 0o111 else b"-"))
        h.update(hashlib.sha256(file.read_bytes()).digest())
    return h.hexdigest()


@pytest.mark.parametrize(
    ("line", "bases"),
    [
        ("FROM boxgym/python", ["python"]),
        ("from boxgym/python:latest AS build", ["python"]),
        ("FROM --platform=linux/amd64 boxgym/sql_db", ["sql_db"]),
        ("FROM boxgym/python:0123456789abcdef", []),  # a pinned tag is left as it is
        ("FROM debian:bookworm-slim", []),
        ("# FROM boxgym/python", []),
    ],
)
def test_the_bases_named_in_a_dockerfile(project, line, bases):
    (project / "images" / "child" / "Dockerfile").write_text(f"{line}\nRUN true\n")
    assert base_images("child") == bases


def test_an_image_without_a_bundled_base_keeps_its_hash(project):
    assert context_hash("base") == _legacy_hash(project / "images" / "base")


def test_a_change_of_the_base_changes_the_image_built_on_it(project):
    before = context_hash("child")
    (project / "images" / "base" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    assert context_hash("child") != before


def test_images_built_on_each_other_in_a_cycle_are_refused(project):
    (project / "images" / "base" / "Dockerfile").write_text("FROM boxgym/child\n")
    with pytest.raises(gym.ConfigError, match="cycle .*child -> base -> child"):
        context_hash("child")


def test_an_unknown_base_names_the_known_images(project):
    (project / "images" / "child" / "Dockerfile").write_text("FROM boxgym/nope\n")
    with pytest.raises(gym.ConfigError, match="known: base, child"):
        context_hash("child")


def test_the_dockerfile_is_built_on_the_base_content_tag(project, monkeypatch):
    built: list[str] = []
    monkeypatch.setattr(_images, "ensure_image", lambda name, **_: built.append(name) or "sha256:x")
    text = resolved_dockerfile("child")
    assert built == ["base"]
    assert f"FROM boxgym/base:{context_hash('base')[:16]}\n" in text
    assert "RUN cat /marker > /copied" in text
    assert resolved_dockerfile("base") is None


@pytest.mark.docker
def test_a_build_on_a_bundled_image_builds_the_base_first_and_uses_its_content(engine, project):
    from gym._sandbox import client

    made: list[str] = []
    try:
        record = gym.images.build_image("child")
        made += [record.tag, f"boxgym/base:{context_hash('base')[:16]}"]
        out = client().containers.run(record.tag, ["cat", "/copied"], remove=True)
        assert out == b"one\n"
        (project / "images" / "base" / "Dockerfile").write_text(
            "FROM debian:bookworm-slim\nRUN echo two > /marker\n"
        )
        _images._resolved.clear()
        again = gym.images.build_image("child")
        made += [again.tag, f"boxgym/base:{context_hash('base')[:16]}"]
        assert again.tag != record.tag
        assert client().containers.run(again.tag, ["cat", "/copied"], remove=True) == b"two\n"
    finally:
        for tag in made:
            with contextlib.suppress(Exception):
                client().images.remove(tag, force=True)
