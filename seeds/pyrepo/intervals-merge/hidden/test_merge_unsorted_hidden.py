from spans import Interval, gaps, merge, total_length

I = Interval


def test_unsorted_input():
    assert merge([I(8, 9), I(2, 6), I(1, 4)]) == [I(1, 6), I(8, 9)]


def test_touching_joined():
    assert merge([I(3, 5), I(1, 3)]) == [I(1, 5)]
    assert merge([I(0, 1), I(1, 2), I(2, 3), I(5, 6)]) == [I(0, 3), I(5, 6)]


def test_empty_intervals_dropped():
    assert merge([I(4, 4), I(1, 2), I(7, 7)]) == [I(1, 2)]
    assert merge([I(3, 3)]) == []
    assert merge([]) == []


def test_contained_and_input_untouched():
    data = [I(5, 6), I(0, 10), I(2, 3)]
    copy = list(data)
    result = merge(data)
    assert result == [I(0, 10)]
    assert data == copy
    assert type(result) is list


def test_total_length_and_gaps_unsorted():
    ivs = [I(6, 8), I(0, 2), I(2, 3), I(1, 2.5)]
    assert total_length(ivs) == 5
    assert gaps(ivs, I(0, 10)) == [I(3, 6), I(8, 10)]
    assert gaps([I(5, 12), I(-3, 1)], I(0, 10)) == [I(1, 5)]
