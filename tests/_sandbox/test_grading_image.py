"""Grading copies: no file of a grading container is a file of an agent container."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from gym._sandbox import DockerSandboxes, SandboxConfig
from gym._sandbox._grading_image import dockerfile, grading_image
from gym._sandbox._images import ensure_image, image_names
from gym.errors import ImageError

_FILES = (
    "stat -c '%d' /; find /usr /etc /bin /lib /sbin -xdev -type f -printf '%D %i %p\\n' 2>/dev/null"
)
"""The root's device, then each regular file of the system folders: device, inode, path."""


def test_the_copy_keeps_the_images_settings_and_adds_a_file_of_its_own() -> None:
    config = {
        "Env": ["PATH=/usr/bin:/bin", 'ODD=a "b" $HOME \\ c'],
        "WorkingDir": "/srv/$HOME/x",
        "User": "1000:1000",
        "Volumes": {"/data": {}},
        "Cmd": ["bash", "-l"],
        "Entrypoint": None,
        "OnBuild": ["RUN touch /onbuild"],
    }
    text = dockerfile("sha256:abc", config)
    assert text.splitlines()[:2] == ["FROM scratch", "COPY --from=sha256:abc / /"]
    assert 'ENV PATH="/usr/bin:/bin"' in text
    assert 'ENV ODD="a \\"b\\" \\$HOME \\\\ c"' in text
    assert "WORKDIR /srv/\\$HOME/x\nUSER 1000:1000\n" in text
    assert 'VOLUME ["/data"]' in text and 'CMD ["bash", "-l"]' in text
    assert "ENTRYPOINT" not in text and "onbuild" not in text


@pytest.mark.parametrize(
    ("config", "what"),
    [
        ({"Env": ["KEY=-----BEGIN\nMIIB\n-----END"]}, "over several lines"),
        ({"Env": ["PATH$NOPE=/evil"]}, "name"),
        ({"Env": ["TWO WORDS=x"]}, "name"),
        ({"WorkingDir": "/w/trail "}, "spaces at its ends"),
    ],
)
def test_a_setting_a_dockerfile_cannot_write_is_refused_with_advice(config, what) -> None:
    with pytest.raises(ImageError, match=what):
        dockerfile("sha256:abc", config)


def test_a_variable_without_a_value_stays_unset() -> None:
    assert "NOEQ" not in dockerfile("sha256:abc", {"Env": ["NOEQ", "A=1"]})


def _files(output: str) -> dict[str, str]:
    """The image's files by path: their inodes (a file mounted from the host left out)."""
    root, *lines = output.splitlines()
    rows = (line.split(" ", 2) for line in lines)
    return {path: inode for device, inode, path in rows if device == root}


@pytest.mark.docker
@pytest.mark.parametrize("name", image_names())
def test_a_grading_container_shares_no_file_with_an_agent_container(
    engine: None, name: str
) -> None:
    """A page of a shared file is state both can set and read (its page cache), even later."""
    config = SandboxConfig(image=ensure_image(name), memory_mb=256, pids_limit=64)
    with DockerSandboxes() as provider:
        agent, grader = provider.acquire(config, run="pytest"), provider.grader(config)
        try:
            mine = _files(agent.exec(["sh", "-c", _FILES], timeout=60).stdout)
            graders = _files(grader.exec(["sh", "-c", _FILES], timeout=60).stdout)
        finally:
            provider.release(agent)
            provider.release(grader)
        once = _files(provider.run_once(config, ["sh", "-c", _FILES], timeout=60).stdout)
    assert len(mine) > 100 and mine.keys() == graders.keys() == once.keys()
    assert not set(mine.values()) & set(graders.values())
    assert not set(mine.values()) & set(once.values())


@pytest.mark.docker
def test_a_copy_is_its_own_grading_copy(engine: None) -> None:
    copy = grading_image(ensure_image("python"))
    assert grading_image(copy) == copy != ensure_image("python")


@pytest.mark.docker
def test_no_image_is_left_that_depends_on_the_copied_one(engine: None, tmp_path: Path) -> None:
    """`gym images prune` removes an image with its copies: nothing else may need it."""
    import docker

    (tmp_path / "Dockerfile").write_text(
        f"FROM {ensure_image('python')}\nRUN echo {uuid.uuid4().hex} > /own\n"
    )
    engine_client = docker.from_env()
    source, _ = engine_client.images.build(path=str(tmp_path), rm=True, forcerm=True)
    try:
        copy = grading_image(source.id)
        children = [
            i["Id"] for i in engine_client.api.images(all=True) if i.get("ParentId") == source.id
        ]
        engine_client.images.remove(copy, force=True)
    finally:
        engine_client.images.remove(source.id, force=True)
    assert children == []


@pytest.mark.docker
def test_an_image_of_one_layer_gets_a_copy_of_its_own(engine: None) -> None:
    """Copied alone, its files made the very layer it has (the mark is in the copy's one)."""
    import docker

    engine_client = docker.from_env()
    source = engine_client.images.get("debian:bookworm-slim")
    assert len(source.attrs["RootFS"]["Layers"]) == 1
    copy = engine_client.images.get(grading_image(source.id))
    assert not set(copy.attrs["RootFS"]["Layers"]) & set(source.attrs["RootFS"]["Layers"])
