import pytest

from transit import Network, parse_network


def test_parse():
    net = parse_network("# line 1\nAlpha - Beta: 5\n\nBeta - Gamma : 7\n")
    assert net.stations() == ["Alpha", "Beta", "Gamma"]
    assert net.neighbours("Beta") == {"Alpha": 5, "Gamma": 7}


def test_bad_links():
    net = Network()
    with pytest.raises(ValueError):
        net.add_link("a", "b", -1)
    with pytest.raises(ValueError):
        net.add_link("a", "a", 1)
    with pytest.raises(ValueError):
        parse_network("a -- b")
