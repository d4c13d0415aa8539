import pytest

from depgraph import CycleError, build_order, parse_deps


def is_cycle(text, cycle):
    """Whether ``cycle`` follows the dependencies ``text`` declares (read here, not by the code)."""
    deps = {}
    for line in text.splitlines():
        name, _, after = line.partition(":")
        deps[name.strip()] = set(after.split())
    assert type(cycle) is list and len(cycle) >= 2
    assert cycle[0] == cycle[-1]
    assert len(set(cycle[:-1])) == len(cycle) - 1
    return all(b in deps.get(a, ()) for a, b in zip(cycle, cycle[1:]))


def test_ties_alphabetical():
    graph = parse_deps("zeta:\nalpha:\nmid:\n")
    assert build_order(graph) == ["alpha", "mid", "zeta"]


def test_diamond():
    graph = parse_deps("app: net ui\nnet: core\nui: core\ncore:\nbase:\n")
    assert build_order(graph) == ["base", "core", "net", "ui", "app"]


def test_newly_ready_compete_with_waiting():
    graph = parse_deps("b: a\nc:\na:\nd:\n")
    assert build_order(graph) == ["a", "b", "c", "d"]


def test_two_cycle():
    graph = parse_deps("a: b\nb: a\nc:\n")
    with pytest.raises(CycleError) as info:
        build_order(graph)
    assert info.value.cycle in (["a", "b", "a"], ["b", "a", "b"])
    assert isinstance(info.value, ValueError)


def test_cycle_behind_dependents():
    text = "top: x\nx: y\ny: z\nz: x\nfree:\n"
    with pytest.raises(CycleError) as info:
        build_order(parse_deps(text))
    cycle = info.value.cycle
    assert is_cycle(text, cycle)
    assert sorted(cycle[:-1]) == ["x", "y", "z"]


def test_self_loop():
    graph = parse_deps("x: x\n")
    with pytest.raises(CycleError) as info:
        build_order(graph)
    assert info.value.cycle == ["x", "x"]
