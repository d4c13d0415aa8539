"""An editable text buffer with undo."""

from textbuf.buffer import Buffer
from textbuf.commands import Delete, EditError, Insert, NothingToUndo

__all__ = ["Buffer", "Delete", "EditError", "Insert", "NothingToUndo"]
