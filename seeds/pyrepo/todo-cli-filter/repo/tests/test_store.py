from todocli import Item, load_items, save_items


def test_roundtrip(tmp_path):
    path = tmp_path / "todo.json"
    save_items(path, [Item(2, "b", True, ["x"]), Item(1, "a")])
    assert load_items(path) == [Item(1, "a"), Item(2, "b", True, ["x"])]


def test_missing_file(tmp_path):
    assert load_items(tmp_path / "none.json") == []


def test_line():
    assert Item(3, "Buy milk", True, ["shop", "home"]).line() == "[x] 3 Buy milk #home #shop"
