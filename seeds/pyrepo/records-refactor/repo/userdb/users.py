"""passwd-style files: name:uid:gid:home:shell."""

from typing import NamedTuple


class User(NamedTuple):
    name: str
    uid: int
    gid: int
    home: str
    shell: str


def read_users(text):
    """Users of a passwd-style file (blank lines and # comments are skipped)."""
    users = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split(":")
        if len(parts) != 5:
            raise ValueError(f"line {number}: expected 5 fields, got {len(parts)}")
        name, uid, gid, home, shell = parts
        users.append(User(name, int(uid), int(gid), home, shell))
    return users
