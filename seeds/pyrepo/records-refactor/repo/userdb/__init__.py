"""Reading passwd- and group-style files."""

from userdb.groups import Group, read_groups
from userdb.users import User, read_users

__all__ = ["Group", "User", "read_groups", "read_users"]
