"""The buffer."""

from textbuf.commands import Delete, EditError, Insert, NothingToUndo


class Buffer:
    """Text plus the history of edits made to it."""

    def __init__(self, text=""):
        self.text = text
        self._undo = []

    def _do(self, command):
        self.text = command.apply(self.text)
        self._undo.append(command)
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

    def undo(self):
        """Revert the last edit; return the new text."""
        if not self._undo:
            raise NothingToUndo("nothing to undo")
        command = self._undo.pop()
        self.text = command.revert(self.text)
        return self.text
