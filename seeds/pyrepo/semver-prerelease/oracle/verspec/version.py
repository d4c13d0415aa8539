"""Parsing and comparing semantic versions (MAJOR.MINOR.PATCH[-PRE][+BUILD])."""

import functools
import re

PATTERN = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


def _identifier_key(ident):
    # numeric identifiers sort before alphanumeric ones, and numerically
    return (0, int(ident), "") if ident.isdigit() else (1, 0, ident)


@functools.total_ordering
class Version:
    """A semantic version, ordered by SemVer 2.0.0 precedence (build metadata ignored)."""

    def __init__(self, major, minor, patch, prerelease=(), build=()):
        self.major = major
        self.minor = minor
        self.patch = patch
        self.prerelease = tuple(prerelease)
        self.build = tuple(build)

    @classmethod
    def parse(cls, text):
        """Parse '1.2.3', '1.2.3-rc.1' or '1.2.3-rc.1+sha.abc'."""
        match = PATTERN.match(text.strip())
        if not match:
            raise ValueError(f"not a semantic version: {text!r}")
        major, minor, patch, pre, build = match.groups()
        return cls(
            int(major),
            int(minor),
            int(patch),
            pre.split(".") if pre else (),
            build.split(".") if build else (),
        )

    def _key(self):
        if self.prerelease:
            pre = (0, tuple(_identifier_key(i) for i in self.prerelease))
        else:
            pre = (1, ())
        return (self.major, self.minor, self.patch, pre)

    def __eq__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def __str__(self):
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self):
        return f"Version.parse({str(self)!r})"
