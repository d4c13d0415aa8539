import pytest

from transit import fewest_stops, parse_network

NET = parse_network("A - B: 10\nB - C: 10\nA - D: 1\nD - E: 1\nE - C: 1\nX - Y: 1\n")


def test_fewest_stops():
    assert fewest_stops(NET, "A", "C") == ["A", "B", "C"]
    assert fewest_stops(NET, "A", "A") == ["A"]
    assert fewest_stops(NET, "A", "X") is None


def test_unknown():
    with pytest.raises(KeyError):
        fewest_stops(NET, "A", "Nowhere")
