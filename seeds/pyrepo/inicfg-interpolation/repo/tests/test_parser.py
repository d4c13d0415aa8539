import pytest

from cfgtool import ParseError, parse_ini


def test_parse():
    text = "; comment\n[Server]\nHost = example.org\nport=8080\n\n[empty]\n"
    assert parse_ini(text) == {"server": {"host": "example.org", "port": "8080"}, "empty": {}}


@pytest.mark.parametrize("text", ["key = 1", "[a]\nnovalue", "[]\n", "[a\nk=v"])
def test_errors(text):
    with pytest.raises(ParseError):
        parse_ini(text)
