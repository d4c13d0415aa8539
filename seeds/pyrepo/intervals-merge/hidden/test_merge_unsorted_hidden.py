from spans import Interval, gaps, merge, total_length

I = Interval


def ends(intervals):
    """The intervals as (start, end) pairs: plain values, compared here, never by their __eq__."""
    return [(i.start, i.end) for i in intervals]


def test_unsorted_input():
    assert ends(merge([I(8, 9), I(2, 6), I(1, 4)])) == [(1, 6), (8, 9)]


def test_touching_joined():
    assert ends(merge([I(3, 5), I(1, 3)])) == [(1, 5)]
    assert ends(merge([I(0, 1), I(1, 2), I(2, 3), I(5, 6)])) == [(0, 3), (5, 6)]


def test_empty_intervals_dropped():
    assert ends(merge([I(4, 4), I(1, 2), I(7, 7)])) == [(1, 2)]
    assert merge([I(3, 3)]) == []
    assert merge([]) == []


def test_contained_and_input_untouched():
    data = [I(5, 6), I(0, 10), I(2, 3)]
    result = merge(data)
    assert ends(result) == [(0, 10)]
    assert ends(data) == [(5, 6), (0, 10), (2, 3)]
    assert type(result) is list


def test_total_length_and_gaps_unsorted():
    ivs = [I(6, 8), I(0, 2), I(2, 3), I(1, 2.5)]
    assert total_length(ivs) == 5
    assert ends(gaps(ivs, I(0, 10))) == [(3, 6), (8, 10)]
    assert ends(gaps([I(5, 12), I(-3, 1)], I(0, 10))) == [(1, 5)]
