"""Reading passwd- and group-style files."""

from userdb.groups import Group, read_groups
from userdb.records import RecordError, parse_records
from userdb.users import User, read_users

__all__ = ["Group", "RecordError", "User", "parse_records", "read_groups", "read_users"]
