"""The hashing of a listing is bounded before any file is read.

A listing hashes every regular file of the writable mounts up to `HASH_LIMIT`; the bytes
it would read are summed first (the keeper: each inode once, its names sharing one
digest; the script of a container without a keeper: each name as ``sha256sum`` reads it),
sparse files at their length, and past what the mounts can hold nothing is read: an
export too large, the agent's doing, never a listing outlasting its deadline (which the
harness reads as its own fault).
"""

from __future__ import annotations

import ast
import os
import subprocess
import time
from pathlib import Path

import pytest

from gym._core._errors import ExportTooLarge
from gym._sandbox import DockerSandbox, SandboxConfig
from gym._sandbox._docker import _no_keeper
from gym._sandbox._keeper import SOURCE
from gym._sandbox._manifest import (
    HASH_LIMIT,
    Node,
    manifest_script,
    mounts_bytes,
    new_split,
    parse_manifest,
)


def test_the_script_leaves_the_same_files_unhashed_as_the_keeper():
    tree = ast.parse(SOURCE)
    limits = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "HASH_LIMIT" for t in node.targets)
    ]
    assert len(limits) == 1
    assert eval(compile(ast.Expression(limits[0]), "keeper", "eval")) == HASH_LIMIT


def test_what_the_mounts_can_hold_is_the_sum_of_their_sizes():
    assert mounts_bytes(SandboxConfig(image="x")) == (256 + 256 + 64) << 20
    sizes = {"/a": "size=1g,mode=1777", "/b": "mode=0755,size=0x1000", "/c": "size=512"}
    assert mounts_bytes(SandboxConfig(image="x", tmpfs=sizes)) == (1 << 30) + 4096 + 512
    # no size the kernel enforces (0 is unlimited): the memory limit holds the pages
    unbounded = SandboxConfig(image="x", memory_mb=300, tmpfs={"/a": "size=0,mode=1777"})
    assert mounts_bytes(unbounded) == 300 << 20


def listed(root: Path, hashed: int | None) -> dict[str, Node]:
    split = new_split()
    script = manifest_script([str(root)], split, hashed)
    done = subprocess.run(["sh", "-c", script], capture_output=True, timeout=60, check=True)
    return parse_manifest(done.stdout, split).nodes


def test_the_script_sums_what_it_would_read_before_reading_any(tmp_path):
    (tmp_path / "small").write_bytes(b"x" * 1000)
    for i in range(4):  # sparse: nothing on disk, 4 * 8 MiB to read
        with open(tmp_path / f"sparse{i}", "wb") as fh:
            fh.truncate(8 << 20)
    with open(tmp_path / "huge", "wb") as fh:  # over the limit: listed, never hashed
        fh.truncate(1 << 40)
    nodes = listed(tmp_path, (32 << 20) + 1000)
    assert len(nodes[f"{tmp_path}/sparse3"].sha256) == 64
    assert nodes[f"{tmp_path}/huge"].sha256 == "" and nodes[f"{tmp_path}/huge"].size == 1 << 40
    with pytest.raises(ExportTooLarge, match="over the hashing budget"):
        listed(tmp_path, (32 << 20) + 999)
    assert len(listed(tmp_path, None)[f"{tmp_path}/small"].sha256) == 64


def test_the_script_counts_each_name_it_would_read(tmp_path):
    (tmp_path / "blob").write_bytes(os.urandom(1 << 20))
    for i in range(3):
        os.link(tmp_path / "blob", tmp_path / f"link{i}")
    assert listed(tmp_path, 4 << 20)[f"{tmp_path}/link2"].sha256
    with pytest.raises(ExportTooLarge):
        listed(tmp_path, (4 << 20) - 1)


# -- in containers: the keeper, and the script where no keeper runs ---------------------------


@pytest.mark.docker
def test_the_keeper_hashes_each_inode_once_and_every_name_shares_its_digest(kept):
    made = kept.run(
        "cd /tmp && head -c 8388608 /dev/urandom > blob && for i in $(seq 300); do "
        "ln blob link$i; done && sha256sum blob",
        timeout=60,
    )
    assert made.ok, made.stderr
    digest = made.stdout.split()[0]
    kept.keeper.hashed = 9 << 20  # 301 names of 8 MiB: one file to read
    nodes = kept.keeper.listing(["/tmp"], time.monotonic() + 30).nodes
    names = [p for p in nodes if p.startswith("/tmp/link") or p == "/tmp/blob"]
    assert len(names) == 301
    assert {nodes[p].sha256 for p in names} == {digest}
    assert kept.run("head -c 8388608 /dev/urandom > /tmp/other").ok  # 16 MiB to read now
    with pytest.raises(ExportTooLarge, match="bytes of files to read for their hashes"):
        kept.keeper.listing(["/tmp"], time.monotonic() + 30)


@pytest.mark.docker
def test_sparse_files_past_what_the_mounts_hold_are_too_large_before_any_is_read(kept):
    assert kept.keeper.hashed == mounts_bytes(kept.config)
    made = kept.run("cd /tmp && for i in $(seq 200); do truncate -s 64M s$i; done && echo ok")
    assert made.stdout == "ok\n", made.stderr
    start = time.monotonic()  # 12.5 GiB of zeros to read, were they read: minutes
    with pytest.raises(ExportTooLarge, match="bytes of files to read for their hashes"):
        kept.final_diff()
    assert time.monotonic() - start < 20
    assert kept.exec(["echo", "alive"]).stdout == "alive\n", "the container is fine"
    with pytest.raises(ExportTooLarge):  # the next answer is its own: the link is in step
        kept.keeper.listing(["/tmp"], time.monotonic() + 30)


@pytest.mark.docker
def test_without_a_keeper_the_freeze_is_bounded_the_same_way(engine):
    config = SandboxConfig(image="debian:bookworm-slim", memory_mb=256, pids_limit=64)
    try:
        with DockerSandbox.create(config, run="pytest") as box:
            assert box.keeper is None
            made = box.run("cd /tmp && for i in $(seq 200); do truncate -s 64M s$i; done")
            assert made.ok, made.stderr
            start = time.monotonic()
            with pytest.raises(ExportTooLarge, match="over the hashing budget"):
                box.final_diff()
            assert time.monotonic() - start < 20
    finally:
        _no_keeper.discard(config.image)
