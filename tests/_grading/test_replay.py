"""The gold-replay comparison: the manifest program, its bounds, and what compares equal."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from gym._core._errors import ConfigError, GradingError, SandboxError
from gym._grading._replay import (
    TREE_PROGRAM,
    FileNode,
    FileTree,
    compare_output,
    compare_trees,
    normalise_output,
    read_file_tree,
    tree_archive,
    unexpected_changes,
)
from gym._sandbox._stream import ExecResult


def listing(
    root: Path, entries: int = 100, depth: int = 8, hashed: int = 1 << 20, printed: int = 1 << 20
) -> FileTree:
    """The manifest program run on a local folder, as it runs in a container."""
    argv = [sys.executable, "-I", "-c", TREE_PROGRAM, str(root), str(entries), str(depth)]
    argv += [str(hashed), str(printed)]
    out = subprocess.run(argv, capture_output=True, check=True, text=True)
    return FileTree.parse(out.stdout)


def tree(**nodes: FileNode) -> FileTree:
    return FileTree(nodes={k.replace("__", "/"): v for k, v in nodes.items()})


def file(data: bytes = b"x", mode: int = 0o644) -> FileNode:
    import hashlib

    return FileNode(type="file", mode=mode, size=len(data), sha256=hashlib.sha256(data).hexdigest())


def test_the_manifest_lists_type_mode_size_hash_and_link_targets(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.txt").write_bytes(b"hello\n")
    (tmp_path / "a" / "f.txt").chmod(0o640)
    (tmp_path / "link").symlink_to("/etc/passwd")
    got = listing(tmp_path)
    assert got.nodes["a"] == FileNode(type="dir", mode=0o755)
    assert got.nodes["a/f.txt"] == file(b"hello\n", 0o640)
    assert got.nodes["link"].type == "symlink" and got.nodes["link"].target == "/etc/passwd"
    assert "never followed" in got.odd["link"] and got.over == ""


def _can_set_xattrs(folder: Path) -> bool:
    probe = folder / ".probe"
    probe.write_text("x")
    try:
        os.setxattr(probe, "user.probe", b"1")
    except OSError:
        return False
    finally:
        probe.unlink()
    return True


def test_the_manifest_lists_the_folder_itself_and_extended_attributes(tmp_path):
    # both were left out, so a gold's chmod of the workspace or a changed attribute was
    # never compared, and the agent's never flagged (found by a red-team helper)
    (tmp_path / "f").write_text("x")
    tmp_path.chmod(0o755)
    before = listing(tmp_path)
    assert before.nodes["."] == FileNode(type="dir", mode=0o755)
    tmp_path.chmod(0o777)
    after = listing(tmp_path)
    assert after.nodes["."].mode == 0o777
    assert any(path == "." for path, _ in after_diffs(after, before))
    if not _can_set_xattrs(tmp_path):
        pytest.skip("this file system keeps no user extended attributes")
    os.setxattr(tmp_path / "f", "user.note", b"one")
    one = listing(tmp_path)
    os.setxattr(tmp_path / "f", "user.note", b"two")
    two = listing(tmp_path)
    assert "" != one.nodes["f"].xattrs != two.nodes["f"].xattrs != ""
    assert one.nodes["f"].differs(two.nodes["f"]) == "extended attributes differ"
    os.removexattr(tmp_path / "f", "user.note")
    assert listing(tmp_path).nodes["f"] == after.nodes["f"]


def after_diffs(final: FileTree, initial: FileTree) -> list[tuple[str, str]]:
    from gym._grading._replay import tree_differences

    return tree_differences(final, initial)


def test_a_change_of_the_folder_itself_or_of_attributes_is_an_unexpected_change():
    initial = FileTree(nodes={".": FileNode(type="dir", mode=0o755), "a": file()})
    marked = file().model_copy(update={"xattrs": "ab" * 32})
    for final in (
        FileTree(nodes={".": FileNode(type="dir", mode=0o777), "a": file()}),
        FileTree(nodes={".": FileNode(type="dir", mode=0o755), "a": marked}),
    ):
        (flag,) = unexpected_changes(initial, initial, final)
        assert flag.gating and flag.name == "unexpected_change"


def test_odd_entries_are_reported_and_never_opened(tmp_path):
    os.mkfifo(tmp_path / "pipe")  # opening it would block the program
    (tmp_path / "new\nline").write_text("x")
    (tmp_path / os.fsdecode(b"bad\xff")).write_text("x")
    (tmp_path / "suid").write_text("x")
    (tmp_path / "suid").chmod(0o4755)
    os.link(tmp_path / "suid", tmp_path / "second")
    got = listing(tmp_path)
    assert got.nodes["pipe"].type == "fifo" and "never opened" in got.odd["pipe"]
    assert "control characters" in got.odd["new\nline"]
    assert "not UTF-8" in got.odd["bad\\xff"]
    assert "setuid" in got.odd["suid"] and got.nodes["suid"].mode == 0o4755
    assert "hard links" in got.odd["second"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000")
def test_an_unreadable_file_has_no_hash_and_never_compares_equal(tmp_path):
    (tmp_path / "secret").write_text("x")
    (tmp_path / "secret").chmod(0)
    got = listing(tmp_path)
    assert got.nodes["secret"].sha256 == "" and "unreadable" in got.odd["secret"]
    assert not compare_trees(got, got).passed


def test_files_without_a_hash_never_compare_equal():
    blind = FileTree(nodes={"a": FileNode(type="file", mode=0o644, size=1)})
    part = compare_trees(blind, blind)
    assert not part.passed and "unreadable" in part.explanation


def test_the_listing_stops_at_its_bounds(tmp_path):
    for n in range(5):
        (tmp_path / f"f{n}").write_bytes(b"x" * 100)
    assert listing(tmp_path, entries=3).over == "entries 3"
    assert listing(tmp_path, hashed=250).over == "bytes 250"
    deep = tmp_path / "d"
    (deep / "e" / "f").mkdir(parents=True)
    got = listing(tmp_path, depth=2)
    assert "d/e" in got.nodes and "d/e/f" not in got.nodes
    assert "deeper than 2" in got.odd["d/e"]


def test_odd_findings_and_long_names_count_against_the_bounds(tmp_path):
    """What the program holds is bounded by the tree's names, not only by its entries:
    entries it cannot even stat were kept without count, and names that are not UTF-8
    grow fourfold escaped (15,000 of them past PATH_MAX got it killed for memory, a
    Shell agent's fail turned into infra_error; found by a red-team helper)."""
    odd = os.fsencode(tmp_path) + b"/" + b"\xff" * 200
    os.mkdir(odd)
    for n in range(40):
        os.mkdir(odd + b"/" + b"\xfe" * 200 + str(n).encode())
    assert listing(tmp_path, entries=60).over == "entries 60"  # 42 entries, 41 odd
    assert listing(tmp_path, entries=1000, printed=20_000).over == "listing 20000"
    whole = listing(tmp_path, entries=1000)
    assert whole.over == "" and len(whole.nodes) == 42


def test_a_tree_over_its_bounds_fails_the_files_part_with_the_bound_named():
    over = FileTree(over="entries 10000")
    part = compare_trees(over, FileTree())
    assert not part.passed and "entries 10000" in part.explanation


@pytest.mark.parametrize("raw", ["", "[]", '{"entries": [[1]], "odd": [], "over": ""}', "{" * 5000])
def test_a_malformed_manifest_is_a_grading_error(raw):
    with pytest.raises(GradingError):
        FileTree.parse(raw)


def test_output_is_compared_once_normalised():
    assert normalise_output("\r\n  a  b\t \r\nc  \n\n") == "a b\nc"
    assert compare_output("a b\nc\n", "a   b\nc").passed
    wrong = compare_output("a b\nd", "a b\nc")
    assert not wrong.passed and "line 2" in wrong.explanation and "'d'" in wrong.explanation
    assert "empty" in compare_output("", "x").explanation
    assert not compare_output("A B\nc", "a b\nc").passed  # case counts
    assert not compare_output("c\na b", "a b\nc").passed  # order counts


def test_trees_compare_type_mode_content_and_targets():
    want = tree(a=file(b"1"), d=FileNode(type="dir", mode=0o755))
    assert compare_trees(want, want).passed
    cases = {
        "content differs": tree(a=file(b"2"), d=FileNode(type="dir", mode=0o755)),
        "mode 600 instead of 644": tree(a=file(b"1", 0o600), d=FileNode(type="dir", mode=0o755)),
        "symlink instead of file": tree(
            a=FileNode(type="symlink", mode=0o777, target="x"), d=FileNode(type="dir", mode=0o755)
        ),
        "missing": tree(d=FileNode(type="dir", mode=0o755)),
        "not expected": tree(a=file(b"1"), b=file(), d=FileNode(type="dir", mode=0o755)),
    }
    for why, got in cases.items():
        part = compare_trees(got, want)
        assert not part.passed and why in part.explanation, (why, part.explanation)


def test_a_last_line_without_its_newline_is_the_same_line(tmp_path):
    (tmp_path / "bare").write_bytes(b"north,505\nsouth,400")
    (tmp_path / "ended").write_bytes(b"north,505\nsouth,400\n")
    (tmp_path / "blank").write_bytes(b"north,505\nsouth,400\n\n")
    (tmp_path / "empty").write_bytes(b"")
    got = listing(tmp_path)
    assert got.nodes["bare"] == got.nodes["ended"] == file(b"north,505\nsouth,400\n")
    assert got.nodes["blank"].differs(got.nodes["ended"])  # an empty last line is a line
    assert got.nodes["empty"] == file(b"")  # nothing to end


def test_a_file_moved_or_a_folder_made_keeps_its_mode_exactly():
    """A rename kept the files' 644: the agent's `chmod 400` after it passed (helper I)."""
    initial = tree(a=file(b"photo"))
    want = tree(b=file(b"photo"), d=FileNode(type="dir", mode=0o755))
    for why, got in {
        "mode 400 instead of 644": tree(b=file(b"photo", 0o400), d=want.nodes["d"]),
        "mode 700 instead of 755": tree(b=want.nodes["b"], d=FileNode(type="dir", mode=0o700)),
    }.items():
        part = compare_trees(got, want, initial=initial)
        assert not part.passed and why in part.explanation, (why, part.explanation)


def test_a_new_entry_may_have_fewer_permissions_than_nobody_chose():
    initial = tree(data=file(b"d"))
    want = tree(data=file(b"d"), out=file(b"o"), run=file(b"r", 0o755))
    fewer = tree(data=file(b"d"), out=file(b"o", 0o600), run=file(b"r", 0o755))
    assert compare_trees(fewer, want, initial=initial).passed  # mktemp's 600, moved in
    assert not compare_trees(fewer, want).passed  # without the initial tree: every mode counts
    cases = {
        "mode 755 instead of 644": tree(
            data=file(b"d"), out=file(b"o", 0o755), run=want.nodes["run"]
        ),
        "mode 4644 instead of 644": tree(
            data=file(b"d"), out=file(b"o", 0o4644), run=want.nodes["run"]
        ),
        "mode 700 instead of 755": tree(data=file(b"d"), out=file(b"o"), run=file(b"r", 0o700)),
        "mode 600 instead of 644": tree(
            data=file(b"d", 0o600), out=file(b"o"), run=want.nodes["run"]
        ),
    }  # more than the default; a mode the gold chose; a file that was there before
    for why, got in cases.items():
        part = compare_trees(got, want, initial=initial)
        assert not part.passed and why in part.explanation, (why, part.explanation)


def test_folders_compare_by_type_and_mode_only():
    want = tree(d=FileNode(type="dir", mode=0o755, size=40))
    assert compare_trees(tree(d=FileNode(type="dir", mode=0o755, size=80)), want).passed
    assert not compare_trees(tree(d=FileNode(type="dir", mode=0o700)), want).passed


def test_paths_limit_the_files_comparison():
    want = tree(out__r=file(b"1"), notes=file(b"n"))
    got = tree(out__r=file(b"1"), notes=file(b"changed"))
    assert compare_trees(got, want, ["out/**"]).passed
    assert not compare_trees(got, want).passed


def test_an_odd_entry_the_gold_does_not_have_never_compares_equal():
    want = tree(a=file(b"1"))
    got = FileTree(nodes=dict(want.nodes), odd={"a": "a file with 2 names (hard links)"})
    part = compare_trees(got, want)
    assert not part.passed and "hard links" in part.explanation


def test_what_the_gold_left_alone_must_stay_as_it_was():
    initial = tree(data=file(b"d"), keep=file(b"k"))
    gold = tree(data=file(b"d"), keep=file(b"k"), out=file(b"o"))
    assert unexpected_changes(initial, gold, gold) == []
    scratch = tree(data=file(b"d"), keep=file(b"k"), out=file(b"o"), tmp=file(b"t"))
    edited = tree(data=file(b"d2"), keep=file(b"k"), out=file(b"wrong"))
    deleted = tree(data=file(b"d"), out=file(b"o"))
    for final, path in ((scratch, "tmp"), (edited, "data"), (deleted, "keep")):
        flags = unexpected_changes(initial, gold, final)
        assert [f.name for f in flags] == ["unexpected_change"] and flags[0].gating
        assert repr(path) in flags[0].detail
    assert "out" not in unexpected_changes(initial, gold, edited)[0].detail  # gold's own path


def test_the_initial_tree_keeps_modes_and_mtimes(tmp_path):
    (tmp_path / "bin").mkdir()
    script = tmp_path / "bin" / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o750)
    os.utime(script, (1_600_000_000, 1_600_000_000))
    (tmp_path / "link").symlink_to("bin/run.sh")
    with tarfile.open(fileobj=io.BytesIO(tree_archive(tmp_path))) as archive:
        members = {m.name: m for m in archive.getmembers()}
    assert set(members) == {"bin", "link", "bin/run.sh"}
    assert members["bin/run.sh"].mode == 0o750 and members["bin/run.sh"].mtime == 1_600_000_000
    assert members["link"].issym() and members["link"].linkname == "bin/run.sh"
    assert tree_archive(tmp_path) == tree_archive(tmp_path)  # deterministic


def test_the_initial_tree_refuses_a_fifo(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(ConfigError, match="only files, folders and links"):
        tree_archive(tmp_path)


def test_no_initial_tree_is_an_empty_archive(tmp_path):
    with tarfile.open(fileobj=io.BytesIO(tree_archive(tmp_path / "absent"))) as archive:
        assert archive.getmembers() == []


class _Cut:
    """A sandbox whose listing program finished (exit 0) with its output cut, or failed."""

    def __init__(self, exit_code: int) -> None:
        self.exit_code = exit_code

    def exec(self, argv: list[str], **kwargs: object) -> ExecResult:
        return ExecResult(exit_code=self.exit_code, stdout="[", stdout_truncated=True)

    def ensure_running(self) -> None:
        pass


def test_a_listing_cut_after_the_program_finished_is_a_tree_over_its_bounds():
    # its output depends on the tree alone: the agent's fail, never an infrastructure error
    tree = read_file_tree(_Cut(0), "/workspace")  # type: ignore[arg-type]
    assert tree.over.startswith("listing over") and not tree.nodes


def test_a_listing_program_that_failed_is_still_the_sandbox_s_error():
    with pytest.raises(SandboxError):
        read_file_tree(_Cut(1), "/workspace")  # type: ignore[arg-type]
