"""Edits as reversible commands."""

from dataclasses import dataclass


class EditError(Exception):
    """An edit that cannot be made."""


class NothingToUndo(EditError):
    """undo() with an empty history."""


@dataclass(frozen=True)
class Insert:
    pos: int
    text: str

    def apply(self, s):
        if not 0 <= self.pos <= len(s):
            raise EditError(f"position {self.pos} is outside the text")
        return s[: self.pos] + self.text + s[self.pos :]

    def revert(self, s):
        return s[: self.pos] + s[self.pos + len(self.text) :]


@dataclass(frozen=True)
class Delete:
    pos: int
    removed: str

    def apply(self, s):
        if s[self.pos : self.pos + len(self.removed)] != self.removed:
            raise EditError("the text to delete is not there")
        return s[: self.pos] + s[self.pos + len(self.removed) :]

    def revert(self, s):
        return s[: self.pos] + self.removed + s[self.pos :]
