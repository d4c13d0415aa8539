"""The buffer."""

from collections import deque

from textbuf.commands import Delete, EditError, Insert, NothingToRedo, NothingToUndo


class Buffer:
    """Text plus the history of edits made to it (the last `limit` can be undone)."""

    def __init__(self, text="", limit=None):
        if limit is not None and limit < 1:
            raise ValueError("limit must be at least 1")
        self.text = text
        self._undo = deque(maxlen=limit)
        self._redo = []

    def _do(self, command):
        self.text = command.apply(self.text)
        self._undo.append(command)
        self._redo.clear()
        return self.text

    def insert(self, pos, text):
        """Insert text at pos; return the new text."""
        return self._do(Insert(pos, text))

    def delete(self, pos, length):
        """Delete length characters from pos; return the new text."""
        if pos < 0 or length < 0 or pos + length > len(self.text):
            raise EditError("range outside the text")
        return self._do(Delete(pos, self.text[pos : pos + length]))

    @property
    def can_undo(self):
        return bool(self._undo)

    @property
    def can_redo(self):
        return bool(self._redo)

    def undo(self):
        """Revert the last edit; return the new text."""
        if not self._undo:
            raise NothingToUndo("nothing to undo")
        command = self._undo.pop()
        self.text = command.revert(self.text)
        self._redo.append(command)
        return self.text

    def redo(self):
        """Apply again the edit most recently undone; return the new text."""
        if not self._redo:
            raise NothingToRedo("nothing to redo")
        command = self._redo.pop()
        self.text = command.apply(self.text)
        self._undo.append(command)
        return self.text
