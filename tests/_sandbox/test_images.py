import pytest

import gym
import gym.images
from gym._sandbox._images import context_hash, forbidden_in_context
from gym.errors import ImageError


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "images" / "demo").mkdir(parents=True)
    (tmp_path / "images" / "demo" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    (tmp_path / "seeds" / "fam" / "t1" / "hidden").mkdir(parents=True)
    (tmp_path / "seeds" / "fam" / "t1" / "hidden" / "test_secret.py").write_text("SECRET = 1\n")
    monkeypatch.setenv("GYM_ROOT", str(tmp_path))
    monkeypatch.setenv("GYM_DATA", str(tmp_path / "data"))
    return tmp_path


def test_context_hash_is_stable_and_content_addressed(project):
    first = context_hash("demo")
    assert first == context_hash("demo")
    (project / "images" / "demo" / "extra.txt").write_text("x")
    assert context_hash("demo") != first


@pytest.mark.parametrize(
    "name",
    ["tests/test_a.py", "test_b.py", "conftest.py", "solution.py", "fix.patch", "hidden/x.py"],
)
def test_test_or_solution_names_are_forbidden(project, name):
    path = project / "images" / "demo" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x = 1\n")
    assert any(name in bad for bad in forbidden_in_context("demo"))


def test_a_copy_of_a_hidden_check_is_forbidden_whatever_its_name(project):
    (project / "images" / "demo" / "innocent.txt").write_text("SECRET = 1\n")
    assert forbidden_in_context("demo") == [
        "innocent.txt (same content as a hidden test or oracle in seeds/)"
    ]


def test_build_refuses_a_context_with_tests_before_touching_the_engine(project):
    (project / "images" / "demo" / "test_leak.py").write_text("assert True\n")
    with pytest.raises(ImageError, match="must never contain tests or solutions"):
        gym.images.build_image("demo")


def test_unknown_image_folder_names_the_known_ones(project):
    with pytest.raises(gym.ConfigError, match="known: demo"):
        context_hash("nope")


@pytest.mark.docker
def test_build_tags_by_content_and_records_the_digest(engine, project):
    record = gym.images.build_image("demo")
    assert record.tag == f"boxgym/demo:{context_hash('demo')[:16]}"
    assert record.digest.startswith("sha256:")
    assert gym.images.ensure_image("demo") == record.digest
    assert (project / "data" / "images.json").read_text().count(record.digest) == 1
