import pytest

from depgraph import parse_deps


def test_parse():
    graph = parse_deps("app: lib utils  # the binary\nlib: utils\n\nutils:\n")
    assert graph.targets() == ["app", "lib", "utils"]
    assert graph.deps("app") == ["lib", "utils"]
    assert graph.dependents("utils") == ["app", "lib"]


def test_bad_line():
    with pytest.raises(ValueError, match="line 2"):
        parse_deps("a: b\nnonsense\n")
