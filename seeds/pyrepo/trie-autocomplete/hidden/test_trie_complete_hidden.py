import pytest

from prefixtree import Trie


def sample():
    trie = Trie()
    for word, n in [("car", 5), ("cart", 2), ("care", 5), ("cat", 9), ("dog", 1), ("ca", 2)]:
        trie.insert(word, n)
    return trie


def test_complete_ranking():
    assert sample().complete("ca") == ["cat", "car", "care", "ca", "cart"]
    assert sample().complete("car", limit=2) == ["car", "care"]
    assert sample().complete("") == ["cat", "car", "care", "ca", "cart"]
    assert sample().complete("", limit=10) == ["cat", "car", "care", "ca", "cart", "dog"]


def test_complete_misses_and_limit():
    assert sample().complete("z") == []
    assert sample().complete("dogs") == []
    with pytest.raises(ValueError):
        sample().complete("c", limit=0)


def test_remove_keeps_relatives():
    trie = sample()
    assert trie.remove("car") is True
    assert "car" not in trie and trie.count("car") == 0
    assert trie.words_with_prefix("car") == ["care", "cart"]
    assert len(trie) == 5
    assert trie.remove("car") is False
    assert trie.remove("c") is False
    assert trie.remove("cars") is False
    assert trie.complete("ca") == ["cat", "care", "ca", "cart"]


def test_remove_prunes_nodes():
    trie = Trie()
    trie.insert("team")
    before = trie.node_count()
    trie.insert("teapot", 3)
    trie.insert("teapots")
    assert trie.remove("teapots") is True
    assert trie.remove("teapot") is True
    assert trie.node_count() == before
    assert trie.remove("team") is True
    assert trie.node_count() == 1 and len(trie) == 0
    trie.insert("team")
    assert trie.complete("te") == ["team"]


def test_remove_word_that_is_prefix():
    trie = Trie()
    trie.insert("a")
    trie.insert("ab")
    nodes = trie.node_count()
    assert trie.remove("a") is True
    assert trie.node_count() == nodes
    assert trie.words_with_prefix("") == ["ab"]
