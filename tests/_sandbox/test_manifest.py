"""Manifest diffs (gym/_sandbox/_manifest.py): what counts as a change."""

from __future__ import annotations

from gym._sandbox._manifest import Manifest, Node


def _m(**nodes: Node) -> Manifest:
    return Manifest(nodes={f"/w/{k}": v for k, v in nodes.items()})


def test_a_folder_or_a_socket_where_a_file_was_is_a_change_to_that_file():
    """A file of the task replaced by a folder (or a socket) is modified, whatever the
    new node is (before: a folder in its place was never reported, so deleting a visible
    test that way raised no flag)."""
    before = _m(a=Node(kind="f", sha256="1", size=3), b=Node(kind="f", sha256="2", size=3))
    after = _m(a=Node(kind="d"), b=Node(kind="s"))
    changes = {c.path: (c.kind, c.node) for c in before.diff(after)}
    assert changes == {"/w/a": ("modified", "d"), "/w/b": ("modified", "s")}


def test_a_folders_mode_is_no_change_and_sizes_come_with_changes():
    before = _m(d=Node(kind="d", mode=0o755), f=Node(kind="f", sha256="1", size=1))
    after = _m(d=Node(kind="d", mode=0o700), f=Node(kind="f", sha256="2", size=2**41))
    (change,) = before.diff(after)
    assert (change.path, change.kind, change.size) == ("/w/f", "modified", 2**41)


def test_a_file_too_large_to_hash_changes_with_its_size():
    """Over the hashing limit a file has no digest: a new size is still a change."""
    before = _m(big=Node(kind="f", size=80 << 20), same=Node(kind="f", size=70 << 20))
    after = _m(big=Node(kind="f", size=90 << 20), same=Node(kind="f", size=70 << 20))
    assert [(c.path, c.kind) for c in before.diff(after)] == [("/w/big", "modified")]


def test_a_path_that_is_not_utf8_or_read_as_another_is_never_named():
    """Two entries whose text is one path (a name that is not UTF-8 reads with U+FFFD):
    whichever comes first, the path is listed as `UNNAMED`, its size and hash no one's."""
    from gym._sandbox._manifest import UNNAMED, parse_manifest

    split = "S"
    small = b"f 644 6 /workspace/h\xff.py\0"
    huge = b"f 644 1099511627776 /workspace/h\xef\xbf\xbd.py\0"
    hashes = b"0" * 64 + b"  /workspace/h\xff.py\0"
    for listing in (small + huge, huge + small, small):
        nodes = parse_manifest(listing + b"S\0" + hashes, split).nodes
        assert list(nodes) == ["/workspace/h\ufffd.py"]
        assert nodes["/workspace/h\ufffd.py"].kind == UNNAMED
        assert nodes["/workspace/h\ufffd.py"].sha256 == ""
    plain = parse_manifest(
        b"f 644 6 /workspace/a.py\0S\0" + b"1" * 64 + b"  /workspace/a.py\0", split
    )
    assert plain.nodes["/workspace/a.py"].kind == "f"
    assert plain.nodes["/workspace/a.py"].sha256 == "1" * 64
