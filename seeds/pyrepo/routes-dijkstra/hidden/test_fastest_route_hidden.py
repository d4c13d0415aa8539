import pytest

from transit import Network, fastest, parse_network

NET = parse_network("A - B: 10\nB - C: 10\nA - D: 1\nD - E: 1\nE - C: 1\nX - Y: 1\n")


def test_fastest_beats_fewest_stops():
    assert fastest(NET, "A", "C") == (3, ["A", "D", "E", "C"])
    assert fastest(NET, "C", "A") == (3, ["C", "E", "D", "A"])


def test_same_station_and_unreachable():
    assert fastest(NET, "B", "B") == (0, ["B"])
    assert fastest(NET, "A", "Y") is None


def test_unknown_station():
    with pytest.raises(KeyError):
        fastest(NET, "A", "Nowhere")
    with pytest.raises(KeyError):
        fastest(NET, "Nowhere", "A")


def test_ties_fewer_stations_then_alphabetical():
    net = parse_network("S - M: 2\nM - T: 2\nS - T: 4\nS - K: 1\nK - L: 1\nL - T: 2\n")
    assert fastest(net, "S", "T") == (4, ["S", "T"])
    net2 = parse_network("S - Q: 1\nQ - T: 1\nS - P: 1\nP - T: 1\nS - R: 2\n")
    assert fastest(net2, "S", "T") == (2, ["S", "P", "T"])


def test_zero_minute_links_and_types():
    net = Network()
    net.add_link("a", "b", 0)
    net.add_link("b", "c", 5)
    net.add_link("a", "c", 5)
    result = fastest(net, "a", "c")
    assert result == (5, ["a", "c"])
    assert type(result) is tuple and type(result[0]) is int and type(result[1]) is list


def test_float_minutes():
    net = Network()
    net.add_link("a", "b", 1.5)
    net.add_link("b", "c", 1.25)
    net.add_link("a", "c", 3.0)
    assert fastest(net, "a", "c") == (2.75, ["a", "b", "c"])


def test_larger_grid():
    net, links = Network(), {}
    for r in range(6):
        for c in range(6):
            if c < 5:
                links[f"{r}{c}", f"{r}{c + 1}"] = 1 + (r * c) % 3
            if r < 5:
                links[f"{r}{c}", f"{r + 1}{c}"] = 1 + (r + c) % 4
    for (a, b), minutes in list(links.items()):
        net.add_link(a, b, minutes)
        links[b, a] = minutes  # both ways, as the network joins them
    minutes, path = fastest(net, "00", "55")
    assert minutes == 14
    assert path[0] == "00" and path[-1] == "55"
    assert sum(links[a, b] for a, b in zip(path, path[1:])) == minutes
