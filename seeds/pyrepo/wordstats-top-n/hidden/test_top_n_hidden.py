from wordstats import top_n


def test_case_insensitive():
    assert top_n("The the THE cat", 1) == [("the", 3)]


def test_ties_alphabetical():
    assert top_n("pear apple pear apple fig", 3) == [("apple", 2), ("pear", 2), ("fig", 1)]


def test_n_larger_than_vocabulary():
    assert top_n("one", 5) == [("one", 1)]


def test_types_are_plain():
    result = top_n("b a b", 2)
    assert type(result) is list and all(type(p) is tuple for p in result)
