from numerals import parse_number


def test_parse_number():
    assert parse_number(" 42 ") == 42
    assert parse_number("XLII") == 42
