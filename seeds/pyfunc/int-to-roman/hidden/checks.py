def _roman(n):
    out = ""
    for value, symbol in ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"),
                          (90, "XC"), (50, "L"), (40, "XL"), (10, "X"), (9, "IX"),
                          (5, "V"), (4, "IV"), (1, "I")):
        while n >= value:
            out += symbol
            n -= value
    return out


def check_examples(candidate):
    assert candidate(14) == "XIV"
    assert candidate(1994) == "MCMXCIV"


def check_edges(candidate):
    assert candidate(1) == "I"
    assert candidate(4) == "IV"
    assert candidate(9) == "IX"
    assert candidate(40) == "XL"
    assert candidate(90) == "XC"
    assert candidate(400) == "CD"
    assert candidate(944) == "CMXLIV"
    assert candidate(3999) == "MMMCMXCIX"
    assert candidate(3888) == "MMMDCCCLXXXVIII"


def check_range(candidate):
    for n in range(1, 4000, 37):
        assert candidate(n) == _roman(n), n
