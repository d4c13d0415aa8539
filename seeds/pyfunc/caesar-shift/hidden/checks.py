def check_examples(candidate):
    assert candidate("abc", 1) == "bcd"
    assert candidate("Hello, World!", 13) == "Uryyb, Jbeyq!"
    assert candidate("abc", -1) == "zab"


def check_wrapping(candidate):
    assert candidate("xyz", 3) == "abc"
    assert candidate("abc", 52) == "abc"
    assert candidate("Zz", 27) == "Aa"
    assert candidate("Aa", -27) == "Zz"
    assert candidate("", 5) == ""


def check_untouched(candidate):
    assert candidate("\u00e9a1 ?", 1) == "\u00e9b1 ?"
    assert candidate("2024-01-01", 7) == "2024-01-01"
