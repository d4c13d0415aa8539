"""The sandbox interface: the Docker and the local implementation behave alike.

Each test runs on both providers: `LocalSandboxes` (no engine, milliseconds) and
`DockerSandboxes` (real hardened containers, docker-marked).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from gym import SandboxError
from gym._sandbox import (
    DockerSandboxes,
    LocalSandbox,
    LocalSandboxes,
    Manifest,
    Sandbox,
    SandboxConfig,
    SandboxProvider,
)
from gym.errors import SandboxUnavailable, UnsafeConfig


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def provider(request) -> Iterator[SandboxProvider]:
    if request.param == "local":
        yield LocalSandboxes(allow_unsafe=True)
        return
    request.getfixturevalue("engine")
    with DockerSandboxes() as docker:  # its warm pools go with it
        yield docker


@pytest.fixture
def config(provider) -> SandboxConfig:
    image = provider.image("python") if isinstance(provider, LocalSandboxes) else None
    if image is None:
        import gym.images

        image = gym.images.ensure_image("python")
    return SandboxConfig(image=image, memory_mb=256, pids_limit=64)


@pytest.fixture
def box(provider, config):
    sandbox = provider.acquire(config, run="pytest")
    try:
        yield sandbox
    finally:
        provider.release(sandbox)


def test_the_local_provider_is_refused_unless_chosen_explicitly():
    with pytest.raises(UnsafeConfig, match="no isolation"):
        LocalSandboxes()
    with LocalSandboxes(allow_unsafe=True).acquire(SandboxConfig(image="x")) as box:
        assert isinstance(box, Sandbox)


def test_exec_reports_exit_code_streams_env_and_stdin(box):
    result = box.exec(
        'echo "$GREETING"; cat; echo oops >&2; exit 3', env={"GREETING": "hi"}, stdin=b"piped\n"
    )
    assert result.exit_code == 3 and not result.ok
    assert result.stdout == "hi\npiped\n" and result.stderr == "oops\n"


def test_exec_timeout_kills_the_command(box):
    start = time.monotonic()
    result = box.exec("sleep 30", timeout=1)
    assert result.timed_out and result.exit_code is None and time.monotonic() - start < 10


def test_the_shell_keeps_directory_and_variables_and_restarts_after_exit(box):
    box.run("mkdir -p sub && cd sub && export X=7")
    assert box.run("echo $X; basename $PWD").stdout == "7\nsub\n"
    assert box.run("exit 4").exit_code == 4
    again = box.run("basename $PWD")
    assert again.shell_restarted and again.stdout == "sub\n"


def test_a_shell_command_that_never_ends_times_out_and_the_shell_recovers(box):
    result = box.run("sleep 30", timeout=1)
    assert result.timed_out and result.exit_code is None
    assert box.run("echo next").stdout == "next\n"


def test_files_round_trip_and_the_diff_sees_changes(box):
    root = box.config.workdir
    files = {"a.txt": b"alpha\n", "pkg/data.bin": bytes(range(256))}
    box.put_files(root, files)
    box.baseline = Manifest.of_files(root, files)
    assert box.read_file("pkg/data.bin") == bytes(range(256))
    assert box.list_files(".", max_depth=2) == ["a.txt", "pkg/", "pkg/data.bin"]
    box.run("echo beta > b.txt && rm a.txt")
    changes = {(c.path.rsplit("/", 1)[-1], c.kind) for c in box.diff()}
    assert {("b.txt", "added"), ("a.txt", "deleted")} <= changes
    (entry,) = box.get_files(root, ["b.txt"])
    assert (entry.path, entry.data) == ("b.txt", b"beta\n")


def test_reading_a_missing_file_raises_a_sandbox_error(box):
    with pytest.raises(SandboxError, match="not a file"):
        box.read_file("nope.txt")


def test_a_closed_sandbox_is_unavailable(provider, config):
    box = provider.acquire(config, run="pytest")
    box.close()
    box.close()
    assert box.closed
    with pytest.raises(SandboxUnavailable):
        box.run("true")


def test_run_once_runs_in_a_fresh_place_and_leaves_nothing(provider, config):
    result = provider.run_once(config, ["sh", "-c", "cat; ls -A"], stdin=b"in\n", timeout=30)
    assert result.ok and result.stdout.startswith("in\n")


def test_a_local_sandbox_maps_the_container_mounts_into_its_folder():
    box = LocalSandbox(SandboxConfig(image="x"))
    try:
        assert box.config.workdir == box.root + "/workspace"
        box.write_file("/workspace/note.txt", b"hi\n")
        assert box.read_file("note.txt") == b"hi\n"
        assert box.exec("cat note.txt; echo $HOME").stdout == f"hi\n{box.root}/home/agent\n"
    finally:
        box.close()
    assert box.closed and not os.path.exists(box.root)
