"""group-style files: name:gid:member,member,..."""

from typing import NamedTuple

from userdb.records import parse_records


def _members(value):
    return [m for m in value.split(",") if m]


class Group(NamedTuple):
    name: str
    gid: int
    members: list


def read_groups(text):
    """Groups of a group-style file (blank lines and # comments are skipped)."""
    rows = parse_records(text, Group._fields, convert={"gid": int, "members": _members})
    return [Group(**row) for row in rows]
