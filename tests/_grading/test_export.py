"""Exporting the final state (gym/_grading/_export.py) on a real container.

What the agent left decides what the export is, never whether there is one: writable
mounts holding more than their listing may be give an ``oversized`` export (the episode
fails with ``export_too_large``); only the container gone is an error of the harness.
"""

from __future__ import annotations

from unittest import mock

import pytest

from gym._core._errors import SandboxUnavailable
from gym._grading import export_workspace
from gym._sandbox import DockerSandbox, SandboxConfig
from gym._sandbox._keeper import KeeperLink

pytestmark = pytest.mark.docker


@pytest.fixture
def box(small_config: SandboxConfig):
    box = DockerSandbox.create(small_config, run="pytest")
    assert box.keeper is not None
    try:
        yield box
    finally:
        box.close()


def test_the_allowed_changes_are_exported(box):
    assert box.run("printf 'x = 1\\n' > /workspace/solution.py && touch /tmp/scratch").ok
    export = export_workspace(box, ("*.py",))
    assert not export.oversized and export.files == {"solution.py": b"x = 1\n"}
    assert {c.path for c in export.changes} >= {"/workspace/solution.py", "/tmp/scratch"}


@pytest.mark.parametrize(("what", "limit"), [("listing_entries", 100), ("listing_bytes", 8192)])
def test_mounts_over_their_listing_cap_give_an_oversized_export(box, what, limit):
    made = box.run("printf 'x = 1\\n' > /workspace/solution.py && cd /tmp && seq 500 | xargs touch")
    assert made.ok
    with mock.patch.object(KeeperLink, what, limit):
        export = export_workspace(box, ("*.py",))
    assert export.oversized and export.files == {} and export.changes == []
    assert box.exec(["echo", "alive"]).stdout == "alive\n"


def test_a_container_gone_is_not_an_oversized_export(box):
    box.container.kill()
    with pytest.raises(SandboxUnavailable):
        export_workspace(box, ("*.py",))


def test_a_sparse_file_over_the_cap_is_oversized_without_being_read(box):
    """A 2 TiB sparse file is a few bytes on disk and 2 TiB to read: the keeper's listed
    size decides, so the export is the agent's ``oversized`` at once (before: tar read
    zeros until the harness's 60 s timeout, an error of ours, infra_error)."""
    import time

    assert box.run("truncate -s 2T /workspace/solution.py").ok
    began = time.monotonic()
    export = export_workspace(box, ("*.py",))
    assert export.oversized and export.files == {}
    assert time.monotonic() - began < 10


def test_a_socket_where_a_file_may_be_is_listed_as_special(box):
    """tar never archives a socket; the listing says what the node is, so the flags see
    it among the links (where a file of the task was, that gates: symlink_planted)."""
    steps = (
        "cd /workspace && mkdir pkg && printf 'z\\n' > pkg/c.py"
        " && python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('b.py')\""
    )
    assert box.run(steps).ok
    export = export_workspace(box, ("*.py", "*/*.py"))
    assert export.links == ["b.py"] and export.files == {"pkg/c.py": b"z\n"}


def test_names_that_read_as_one_are_never_exported_by_that_name(box):
    """A name that is not UTF-8 reads with U+FFFD, as another name may be spelt: the
    listing's size was one file's and the archive the other's (6 bytes listed, a sparse
    terabyte read until the 60 s timeout: infra_error; found by a red-team helper).
    Neither is read by that name; both are listed changes, never applied."""
    twin = "h\ufffd.py"
    steps = (
        "cd /workspace && printf 'x = 1\\n' > \"$(printf 'h\\377.py')\""
        f" && truncate -s 1T '{twin}' && printf 'y = 2\\n' > solution.py"
    )
    assert box.run(steps).ok
    export = export_workspace(box, ("*.py",))
    assert not export.oversized and export.files == {"solution.py": b"y = 2\n"}
    assert export.links == [twin]


def test_a_change_the_agent_made_unreadable_is_never_graded_as_the_pristine_file(box):
    """tar leaves out what the agent's uid cannot read: the change stays listed and is
    never applied (among the links: where a file of the task was, that gates), never
    dropped so that the grader reads the pristine file (found by a red-team helper)."""
    steps = "cd /workspace && printf 'x = (\\n' > solution.py && chmod 000 solution.py"
    assert box.run(steps).ok
    export = export_workspace(box, ("*.py",))
    assert export.files == {} and export.links == ["solution.py"]
    assert [c.path for c in export.changes if c.path.startswith("/workspace")] == [
        "/workspace/solution.py"
    ]


def test_a_folder_made_in_the_allowed_paths_is_listed_empty_or_not(box):
    steps = "cd /workspace && mkdir -p pkg/empty pkg/full /tmp/elsewhere && echo z > pkg/full/c.py"
    assert box.run(steps).ok
    export = export_workspace(box, ("pkg/**",))
    assert sorted(export.folders) == ["pkg/empty", "pkg/full"]
    assert export.files == {"pkg/full/c.py": b"z\n"}


def test_a_symlink_is_exported_as_a_copy_of_the_file_it_resolves_to(box):
    """Its bytes are the exported file's, or the base's that the host passed; a link that
    resolves to no such file (absolute, out of the root, dangling) is never applied."""
    steps = (
        "cd /workspace && printf 'x = 1\\n' > a.py && ln -s a.py b.py && ln -s /etc/passwd c.py"
        " && ln -s ../etc/passwd d.py && ln -s t.py e.py && ln -s missing.py f.py"
    )
    assert box.run(steps).ok
    export = export_workspace(box, ("*.py",), base={"t.py": b"T\n"})
    assert export.files == {"a.py": b"x = 1\n", "b.py": b"x = 1\n", "e.py": b"T\n"}
    assert sorted(export.links) == ["b.py", "c.py", "d.py", "e.py", "f.py"]
