import pytest

from rowkit import read_records, split_line, to_line


def test_separator_inside_quotes():
    assert split_line('"Smith, J",42') == ["Smith, J", "42"]


def test_doubled_quotes():
    assert split_line('a,"say ""hi""",b') == ["a", 'say "hi"', "b"]
    assert split_line('""""') == ['"']


def test_empty_fields():
    assert split_line('"",x,') == ["", "x", ""]
    assert split_line("") == [""]
    assert split_line(",") == ["", ""]


def test_unquoted_kept_verbatim():
    assert split_line(" a , b ") == [" a ", " b "]


def test_other_separator():
    assert split_line('1;"a;b";"c"', sep=";") == ["1", "a;b", "c"]
    assert split_line('x\t"y\tz"', sep="\t") == ["x", "y\tz"]


@pytest.mark.parametrize("line", ['"abc', 'a,"b', '"a"b,c', '"x""'])
def test_malformed(line):
    with pytest.raises(ValueError):
        split_line(line)


def test_roundtrip():
    cases = [
        ["plain", "with,comma", 'quote"inside', '"', "", ",", '""', "multi\nline", " pad "],
        ["", ""],
        ['"leading', 'trailing"'],
    ]
    for fields in cases:
        for sep in (",", ";", "|"):
            assert split_line(to_line(fields, sep), sep) == fields


def test_read_records_quoted():
    text = 'name,"city, country"\n"Doe, Jane","Paris, FR"\nbob,"Oslo, ""NO"""\n'
    assert read_records(text) == [
        {"name": "Doe, Jane", "city, country": "Paris, FR"},
        {"name": "bob", "city, country": 'Oslo, "NO"'},
    ]
