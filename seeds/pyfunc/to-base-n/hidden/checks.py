def check_examples(candidate):
    assert candidate(255, 16) == "ff"
    assert candidate(10, 2) == "1010"
    assert candidate(0, 7) == "0"


def check_edges(candidate):
    assert candidate(35, 36) == "z"
    assert candidate(36, 36) == "10"
    assert candidate(8, 8) == "10"
    assert candidate(1, 2) == "1"


def check_roundtrip(candidate):
    for b in range(2, 37):
        for n in (0, 1, b - 1, b, b * b + 1, 10**12, 3**40):
            r = candidate(n, b)
            assert int(r, b) == n, (n, b)
            assert r == r.lower(), (n, b)
            assert r == "0" or r[0] != "0", (n, b)
