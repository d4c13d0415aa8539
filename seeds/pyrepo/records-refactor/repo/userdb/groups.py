"""group-style files: name:gid:member,member,..."""

from typing import NamedTuple


class Group(NamedTuple):
    name: str
    gid: int
    members: list


def read_groups(text):
    """Groups of a group-style file (blank lines are skipped)."""
    groups = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split(":")
        if len(parts) != 3:
            raise ValueError(f"line {number}: expected 3 fields, got {len(parts)}")
        name, gid, members = parts
        groups.append(Group(name, int(gid), [m for m in members.split(",") if m]))
    return groups
