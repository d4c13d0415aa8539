import pytest

from textbuf import Buffer, EditError, NothingToRedo


def test_redo_after_undo():
    buf = Buffer("abc")
    buf.insert(3, "d")
    buf.delete(0, 1)
    assert buf.undo() == "abcd"
    assert buf.undo() == "abc"
    assert buf.can_redo
    assert buf.redo() == "abcd"
    assert buf.redo() == "bcd"
    assert not buf.can_redo


def test_alternate():
    buf = Buffer()
    buf.insert(0, "x")
    for _ in range(5):
        assert buf.undo() == ""
        assert buf.redo() == "x"
    assert buf.can_undo and not buf.can_redo


def test_nothing_to_redo():
    buf = Buffer("a")
    assert not buf.can_redo
    with pytest.raises(NothingToRedo):
        buf.redo()
    assert issubclass(NothingToRedo, EditError)


def test_new_edit_clears_redo():
    buf = Buffer("abc")
    buf.insert(0, "1")
    buf.insert(0, "2")
    buf.undo()
    buf.delete(0, 1)
    assert buf.text == "abc"
    assert not buf.can_redo
    with pytest.raises(NothingToRedo):
        buf.redo()
    assert buf.undo() == "1abc"


def test_limit():
    buf = Buffer("", limit=2)
    for ch in "abcd":
        buf.insert(len(buf.text), ch)
    assert buf.undo() == "abc"
    assert buf.undo() == "ab"
    assert not buf.can_undo
    assert buf.redo() == "abc"
    with pytest.raises(ValueError):
        Buffer("x", limit=0)


def test_no_limit_by_default():
    buf = Buffer()
    for i in range(200):
        buf.insert(0, "x")
    for _ in range(200):
        buf.undo()
    assert buf.text == "" and not buf.can_undo
