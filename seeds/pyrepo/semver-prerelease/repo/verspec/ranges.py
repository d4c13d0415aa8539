"""Version ranges: comma-separated comparisons such as '>=1.2.0,<2.0.0'."""

import operator
import re

from verspec.version import Version

OPS = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}
CLAUSE = re.compile(r"^\s*(>=|<=|>|<|==|!=)\s*(\S+)\s*$")


def _as_version(value):
    return value if isinstance(value, Version) else Version.parse(value)


def satisfies(version, spec):
    """Whether version meets every clause of spec."""
    version = _as_version(version)
    for clause in spec.split(","):
        match = CLAUSE.match(clause)
        if not match:
            raise ValueError(f"bad range clause: {clause!r}")
        op, bound = match.groups()
        if not OPS[op](version, Version.parse(bound)):
            return False
    return True


def max_version(versions, spec=None):
    """The highest of versions (strings or Versions) meeting spec, or None."""
    candidates = [_as_version(v) for v in versions]
    if spec is not None:
        candidates = [v for v in candidates if satisfies(v, spec)]
    return max(candidates, default=None)
