def check_examples(candidate):
    assert candidate("1h30m") == 5400
    assert candidate("2d") == 172800


def check_edges(candidate):
    assert candidate("45s") == 45
    assert candidate("0s") == 0
    assert candidate("1d1h1m1s") == 90061
    assert candidate("10m10m") == 1200
    assert candidate("100h") == 360000
    assert candidate("3s2m") == 123
    assert candidate("007m") == 420
