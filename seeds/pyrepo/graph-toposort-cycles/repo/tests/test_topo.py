from depgraph import build_order, parse_deps


def test_chain():
    assert build_order(parse_deps("c: b\nb: a\na:\n")) == ["a", "b", "c"]


def test_single():
    assert build_order(parse_deps("only:")) == ["only"]
