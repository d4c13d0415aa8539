import io
import tarfile

import pytest

from gym._sandbox import pack, unpack
from gym.errors import UnsafeArchive


def archive(*members: tuple[str, str, str]) -> bytes:
    """Members: (name, kind, content-or-target)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                data = payload.encode()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                continue
            info.type = {
                "symlink": tarfile.SYMTYPE,
                "hardlink": tarfile.LNKTYPE,
                "chr": tarfile.CHRTYPE,
                "fifo": tarfile.FIFOTYPE,
                "dir": tarfile.DIRTYPE,
            }[kind]
            info.linkname = payload
            tar.addfile(info)
    return buf.getvalue()


def test_round_trip_of_plain_files():
    files = {"a.txt": b"hello", "pkg/mod.py": b"x = 1\n"}
    entries = {e.path: e for e in unpack(pack(files))}
    assert entries["a.txt"].data == b"hello" and entries["pkg/mod.py"].kind == "file"


def test_pack_is_deterministic():
    files = {"b": b"2", "a": b"1"}
    assert pack(files) == pack(dict(reversed(files.items())))


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (("/etc/passwd", "file", "x"), "absolute"),
        (("../escape.txt", "file", "x"), "climbs"),
        (("a/../../escape.txt", "file", "x"), "climbs"),
        (("link", "symlink", "/etc/shadow"), "absolute"),
        (("dir/link", "symlink", "../../outside"), "escapes"),
        (("hard", "hardlink", "etc/passwd"), "hard link"),
        (("dev", "chr", ""), "device"),
        (("pipe", "fifo", ""), "device"),
    ],
)
def test_hostile_members_are_rejected(member, message):
    with pytest.raises(UnsafeArchive, match=message):
        unpack(archive(member))


def test_symlink_inside_the_root_is_kept_not_followed():
    entries = unpack(archive(("dir", "dir", ""), ("dir/link", "symlink", "../a.txt")))
    link = next(e for e in entries if e.path == "dir/link")
    assert link.kind == "symlink" and link.target == "../a.txt" and link.data == b""


def test_total_size_is_capped():
    with pytest.raises(UnsafeArchive, match="more than"):
        unpack(pack({"big": b"x" * 2000}), max_bytes=1000)


def test_malformed_archive_is_an_unsafe_archive_error():
    with pytest.raises(UnsafeArchive, match="malformed"):
        unpack(b"\x01" * 1024)


@pytest.mark.parametrize("cut", ["between entries", "inside a long name", "no end at all"])
def test_an_archive_cut_short_is_never_read_as_fewer_files(cut):
    """Python's tarfile ends quietly where a header is missing: a stream cut between two
    entries would read as an archive of the first alone. Only tar's end says it is whole."""
    long_name = "d" * 180  # a GNU long-name record precedes its header
    whole = pack({"a.txt": b"x" * 700, long_name: b"y", "z.txt": b"z"})
    first = 512 + 1024  # a.txt: its header and two blocks of data
    entries = first + 2048 + 1024  # the long name: record, name, header, data; then z.txt
    at = {
        "between entries": first,
        "inside a long name": first + 1024,  # the long-name record and its name, no header
        "no end at all": entries + 512,  # every entry, one zero block of the two
    }[cut]
    assert len(unpack(whole)) == 3
    with pytest.raises(UnsafeArchive, match="cut short|malformed"):
        unpack(whole[:at])
