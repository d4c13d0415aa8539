"""Semantic versions and version ranges."""

from verspec.ranges import max_version, satisfies
from verspec.version import Version

__all__ = ["Version", "max_version", "satisfies"]
