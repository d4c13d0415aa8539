"""Symlinks graded as copies of the regular file they resolve to (gym/_grading/_links.py).

Resolution reads plain values only (the export, the task's base tree, the links'
targets): whatever a link names, the bytes graded are bytes the host already held.
"""

from __future__ import annotations

import pytest

from gym._grading._export import Export, _symlinks_as_files, final_tree
from gym._grading._links import MAX_HOPS, resolve
from gym._sandbox import Change

BASE = {
    "pkg/__init__.py": b"",
    "pkg/core.py": b"BASE = 1\n",
    "tests/test_core.py": b"def test_core():\n    pass\n",
    "data/table.csv": b"a,b\n",
}


def export_with(links: dict[str, str], files: dict[str, bytes | None] | None = None) -> Export:
    files = files or {}
    changes = [Change(path=f"/workspace/{p}", kind="added", node="l") for p in links]
    changes += [Change(path=f"/workspace/{p}", kind="added") for p in files]
    return Export(files=files, changes=changes, links=sorted(links))


def resolved(links: dict[str, str], files: dict[str, bytes | None] | None = None) -> dict:
    export = export_with(links, files)
    tree = final_tree(export, links, BASE)
    return {link: resolve(link, tree) for link in links}


@pytest.mark.parametrize(
    ("links", "files", "expected"),
    [
        (
            {"pkg/ranking.py": "ranking_impl.py"},
            {"pkg/ranking_impl.py": b"R\n"},
            "pkg/ranking_impl.py",
        ),
        ({"pkg/alias.py": "core.py"}, {}, "pkg/core.py"),
        ({"pkg/table.csv": "../data/table.csv"}, {}, "data/table.csv"),
        ({"pkg/copy.py": "./../tests//test_core.py"}, {}, "tests/test_core.py"),
        ({"pkg/x.py": "sub/../core.py"}, {"pkg/sub/y.py": b""}, "pkg/core.py"),
    ],
    ids=[
        "to_an_exported_file",
        "to_a_base_file",
        "up_and_over",
        "dots_and_slashes",
        "via_a_folder",
    ],
)
def test_a_link_resolves_to_a_regular_file_the_host_holds(links, files, expected):
    assert resolved(links, files) == {next(iter(links)): expected}


def test_a_chain_resolves_through_each_link_from_its_own_folder():
    links = {"pkg/a.py": "sub/b.py", "pkg/sub/b.py": "../../data/c.py", "data/c.py": "table.csv"}
    assert resolved(links)["pkg/a.py"] == "data/table.csv"


def test_a_link_to_a_folder_through_which_a_path_goes_is_followed():
    links = {"pkg/lib": "../data", "pkg/t.csv": "lib/table.csv", "pkg/up.py": "lib/../pkg/core.py"}
    found = resolved(links)
    assert found["pkg/t.csv"] == "data/table.csv" and found["pkg/up.py"] == "pkg/core.py"
    assert found["pkg/lib"] is None  # a folder is never graded as a file


@pytest.mark.parametrize(
    "links",
    [
        {"pkg/a.py": "a.py"},
        {"pkg/a.py": "b.py", "pkg/b.py": "a.py"},
        {f"pkg/{i}.py": f"{i + 1}.py" for i in range(MAX_HOPS)} | {f"pkg/{MAX_HOPS}.py": "core.py"},
    ],
    ids=["itself", "two", "longer_than_allowed"],
)
def test_a_loop_or_a_chain_too_long_resolves_to_nothing(links):
    assert resolved(links)["pkg/0.py" if "pkg/0.py" in links else "pkg/a.py"] is None


def test_a_chain_as_long_as_allowed_resolves():
    links = {f"pkg/{i}.py": f"{i + 1}.py" for i in range(MAX_HOPS - 1)}
    links[f"pkg/{MAX_HOPS - 1}.py"] = "core.py"
    assert resolved(links)["pkg/0.py"] == "pkg/core.py"


@pytest.mark.parametrize(
    "target",
    [
        "/workspace/pkg/core.py",  # absolute, even inside the workspace
        "/grade/tests/test_hidden.py",
        "/proc/self/environ",
        "../../etc/passwd",  # climbs out of the root
        "../../workspace/pkg/core.py",  # out and back in: still out
        "../../../../../../etc/passwd",
        "missing.py",  # dangling
        "../data",  # a folder
        ".",
        "core.py/",  # a file used as a folder
        "core.py/..",
        "",
    ],
)
def test_anything_else_resolves_to_nothing(target):
    assert resolved({"pkg/l.py": target}) == {"pkg/l.py": None}


def test_a_file_changed_without_its_content_exported_resolves_to_nothing():
    """A base file changed outside the writable paths, made unreadable or replaced by a
    fifo: its final bytes are unknown to the host, and its pristine bytes are not what
    the agent left."""
    export = export_with({"pkg/l.py": "../data/table.csv"})
    export.changes.append(Change(path="/workspace/data/table.csv", kind="modified"))
    tree = final_tree(export, {"pkg/l.py": "../data/table.csv"}, BASE)
    assert resolve("pkg/l.py", tree) is None


def test_a_deleted_file_and_an_unexported_link_resolve_to_nothing():
    export = export_with({"pkg/l.py": "core.py", "pkg/m.py": "../lib/x.py"}, {"pkg/core.py": None})
    export.changes.append(Change(path="/workspace/lib", kind="added", node="l"))  # outside
    tree = final_tree(export, {"pkg/l.py": "core.py", "pkg/m.py": "../lib/x.py"}, BASE)
    assert resolve("pkg/l.py", tree) is None and resolve("pkg/m.py", tree) is None


def test_git_and_caches_are_never_resolved_to():
    base = {**BASE, "pkg/__pycache__/core.cpython-311.pyc": b"cached"}
    links = {"pkg/a": "__pycache__/core.cpython-311.pyc", "pkg/b": "../.git/HEAD"}
    tree = final_tree(export_with(links), links, base)
    assert resolve("pkg/a", tree) is None and resolve("pkg/b", tree) is None


def test_copies_take_their_bytes_from_the_host_and_count_against_the_cap():
    links = {"pkg/alias.py": "core.py", "pkg/twin.py": "mine.py", "pkg/gone.py": "/etc/passwd"}
    export = export_with(links, {"pkg/mine.py": b"M" * 10})
    assert _symlinks_as_files(export, links, BASE, max_bytes=100)
    assert export.files == {
        "pkg/mine.py": b"M" * 10,
        "pkg/alias.py": b"BASE = 1\n",
        "pkg/twin.py": b"M" * 10,
    }
    again = export_with(links, {"pkg/mine.py": b"M" * 10})
    assert not _symlinks_as_files(again, links, BASE, max_bytes=25)


def test_without_a_base_a_link_resolves_only_to_exported_files():
    links = {"pkg/alias.py": "core.py", "pkg/twin.py": "mine.py"}
    export = export_with(links, {"pkg/mine.py": b"M"})
    tree = final_tree(export, links, {})
    assert resolve("pkg/alias.py", tree) is None and resolve("pkg/twin.py", tree) == "pkg/mine.py"


def test_the_work_of_resolving_is_bounded_whatever_the_links_name():
    """Thousands of links, each through a chain of links with targets of 4,000 dots:
    resolving them all stays within the shared budget (about a second), and what is past
    it resolves to nothing."""
    import time

    from gym._grading._links import Budget, copies

    long = "/".join(["."] * 2000) + "/"
    chain = {f"pkg/c{i}": f"{long}c{i + 1}" for i in range(MAX_HOPS - 2)}
    chain[f"pkg/c{MAX_HOPS - 2}"] = "core.py"
    links = chain | {f"pkg/l{i}.py": "c0" for i in range(3000)}
    tree = final_tree(export_with(links), links, BASE)
    began = time.monotonic()
    found = copies(tree)
    assert time.monotonic() - began < 10
    assert 0 < len(found) < len(links)
    assert resolve("pkg/l0.py", tree) == "pkg/core.py"  # on its own, within a fresh budget
    assert resolve("pkg/l0.py", tree, Budget(left=100)) is None
