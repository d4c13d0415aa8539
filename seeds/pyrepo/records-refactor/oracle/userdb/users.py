"""passwd-style files: name:uid:gid:home:shell."""

from typing import NamedTuple

from userdb.records import parse_records


class User(NamedTuple):
    name: str
    uid: int
    gid: int
    home: str
    shell: str


def read_users(text):
    """Users of a passwd-style file (blank lines and # comments are skipped)."""
    rows = parse_records(text, User._fields, convert={"uid": int, "gid": int})
    return [User(**row) for row in rows]
