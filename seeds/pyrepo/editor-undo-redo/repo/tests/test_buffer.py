import pytest

from textbuf import Buffer, EditError, NothingToUndo


def test_edits():
    buf = Buffer("hello")
    assert buf.insert(5, " world") == "hello world"
    assert buf.delete(0, 6) == "world"


def test_undo():
    buf = Buffer("abc")
    buf.insert(1, "XY")
    buf.delete(0, 1)
    assert buf.undo() == "aXYbc"
    assert buf.undo() == "abc"
    assert not buf.can_undo
    with pytest.raises(NothingToUndo):
        buf.undo()


def test_bad_edits():
    buf = Buffer("abc")
    with pytest.raises(EditError):
        buf.insert(9, "x")
    with pytest.raises(EditError):
        buf.delete(2, 5)
    assert not buf.can_undo
