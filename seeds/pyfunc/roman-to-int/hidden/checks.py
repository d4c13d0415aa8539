def check_examples(candidate):
    assert candidate("LVIII") == 58
    assert candidate("MCMXCIV") == 1994


def check_edges(candidate):
    assert candidate("I") == 1
    assert candidate("III") == 3
    assert candidate("IV") == 4
    assert candidate("IX") == 9
    assert candidate("XL") == 40
    assert candidate("CD") == 400
    assert candidate("MMMCMXCIX") == 3999
    assert candidate("CDXLIV") == 444
