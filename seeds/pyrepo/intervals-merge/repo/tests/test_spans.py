import pytest

from spans import Interval, gaps, merge, total_length


def test_interval():
    iv = Interval(1, 4)
    assert iv.length == 3
    assert 1 in iv and 4 not in iv
    assert iv.overlaps(Interval(3, 9)) and not iv.overlaps(Interval(4, 9))
    with pytest.raises(ValueError):
        Interval(5, 1)


def test_merge_sorted_overlapping():
    assert merge([Interval(1, 4), Interval(2, 6), Interval(8, 9)]) == [
        Interval(1, 6),
        Interval(8, 9),
    ]


def test_total_length_sorted():
    assert total_length([Interval(0, 2), Interval(1, 3)]) == 3


def test_gaps_sorted():
    assert gaps([Interval(2, 4)], Interval(0, 10)) == [Interval(0, 2), Interval(4, 10)]
