"""Images at scale: shared by content, pruned least recently used first under a budget.

The engine is shared: every test works only on images it builds under names of its own
and restricts `prune` to those names.
"""

from __future__ import annotations

import time
import uuid

import pytest

import gym
from gym._sandbox import client
from gym._sandbox._image_disk import disk_use, parse_size, prune
from gym._sandbox._images import list_images, record_use
from gym.images import build_image

pytestmark = pytest.mark.docker


def test_sizes_parse_in_the_usual_units():
    assert parse_size("500M") == 500 * 2**20
    assert parse_size("1.5GiB") == int(1.5 * 2**30)
    assert parse_size("20g") == 20 * 2**30 and parse_size("1024") == 1024
    with pytest.raises(gym.ConfigError, match="not a size"):
        parse_size("lots")


@pytest.fixture
def project(tmp_path, monkeypatch, engine):
    monkeypatch.setenv("GYM_ROOT", str(tmp_path))
    monkeypatch.setenv("GYM_DATA", str(tmp_path / "data"))
    made: list[str] = []

    def folder(content: str) -> str:
        name = f"disk-{uuid.uuid4().hex[:8]}"
        (tmp_path / "images" / name).mkdir(parents=True)
        (tmp_path / "images" / name / "Dockerfile").write_text(
            "FROM debian:bookworm-slim\nCOPY data.txt /opt/data.txt\n"
        )
        (tmp_path / "images" / name / "data.txt").write_text(content)
        made.append(name)
        return name

    yield folder
    for name in made:
        for image in client().images.list(name=f"boxgym/{name}"):
            for tag in image.tags:
                client().images.remove(tag)


def test_two_folders_with_the_same_content_share_one_image(project):
    content = f"same {uuid.uuid4()}\n" * 100
    first, second = project(content), project(content)
    a, b = build_image(first), build_image(second)
    assert a.digest == b.digest and a.tag != b.tag
    names = {r.name for r in list_images() if r.digest == a.digest}
    assert {first, second} <= names
    other = build_image(project(content + "different\n"))
    assert other.digest != a.digest


def test_prune_removes_the_least_recently_used_and_a_dry_run_nothing(project):
    old, new = project("old\n" * 5000), project("new\n" * 5000)
    old_id, new_id = build_image(old).digest, build_image(new).digest
    record_use(new_id)
    record_use(old_id)
    record_use(new_id)  # newest last: old is the least recently used
    uses = {i.digest: i.last_used for i in disk_use().images}
    assert uses[old_id] < uses[new_id]
    budget = disk_use().total - 1  # one byte too many: the least recently used must go
    dry = prune(budget, dry_run=True, names=[old, new])
    assert dry.removed[0].digest == old_id and dry.dry_run
    assert client().images.get(old_id)  # a dry run removes nothing
    done = prune(budget, names=[old, new])
    assert done.removed[0].digest == old_id
    assert not client().images.list(name=f"boxgym/{old}")


def test_prune_never_removes_an_image_a_container_uses(project):
    name = project(f"busy {uuid.uuid4()}\n" * 1000)
    digest = build_image(name).digest
    container = client().containers.run(
        digest, ["sleep", "60"], detach=True, network_mode="none", labels={"boxgym.test": "1"}
    )
    try:
        deadline = time.monotonic() + 10
        while not [i for i in disk_use().images if i.digest == digest and i.containers]:
            assert time.monotonic() < deadline, "the engine should count the container"
            time.sleep(0.2)
        result = prune(0, names=[name])
        assert [i.digest for i in result.kept_in_use] == [digest] and not result.removed
        assert client().images.get(digest)
    finally:
        container.remove(force=True)


def test_doctor_shows_each_images_disk_and_the_families_it_serves(python_image, monkeypatch):
    from gym._cli._doctor import _image_disk

    monkeypatch.delenv("GYM_IMAGE_BUDGET", raising=False)
    check = _image_disk()
    assert check.ok and "MiB of images" in check.detail
    shown = next(part for part in check.detail.split("; ") if "pyfunc" in part)
    assert "python" in shown and "MiB own" in shown, "the python image serves pyfunc"
    monkeypatch.setenv("GYM_IMAGE_BUDGET", "1M")  # far below what the images take
    over = _image_disk()
    assert not over.ok and "gym images prune --budget 1M" in over.fix
