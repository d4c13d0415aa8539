"""An editable text buffer with undo and redo."""

from textbuf.buffer import Buffer
from textbuf.commands import Delete, EditError, Insert, NothingToRedo, NothingToUndo

__all__ = ["Buffer", "Delete", "EditError", "Insert", "NothingToRedo", "NothingToUndo"]
