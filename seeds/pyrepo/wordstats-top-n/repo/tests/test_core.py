from wordstats import count_words, top_n


def test_count_words():
    assert count_words("a b a")["a"] == 2


def test_top_n_simple():
    assert top_n("x y x", 1) == [("x", 2)]
