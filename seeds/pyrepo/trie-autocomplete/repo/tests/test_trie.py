import pytest

from prefixtree import Trie, from_text


def test_insert_and_count():
    trie = Trie()
    trie.insert("car")
    trie.insert("car", 2)
    trie.insert("cart")
    assert trie.count("car") == 3
    assert "ca" not in trie and "cart" in trie
    assert len(trie) == 2


def test_words_with_prefix():
    trie = from_text("Cart car cat; dog. CAR")
    assert trie.words_with_prefix("ca") == ["car", "cart", "cat"]
    assert trie.words_with_prefix("x") == []
    assert trie.count("car") == 2


def test_node_count():
    trie = Trie()
    assert trie.node_count() == 1
    trie.insert("ab")
    trie.insert("ac")
    assert trie.node_count() == 4


def test_invalid():
    with pytest.raises(ValueError):
        Trie().insert("")
