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
