import pytest

from verspec import Version


def test_parse_fields():
    v = Version.parse("1.22.3-beta.2+sha.5114f85")
    assert (v.major, v.minor, v.patch) == (1, 22, 3)
    assert v.prerelease == ("beta", "2")
    assert v.build == ("sha", "5114f85")
    assert str(v) == "1.22.3-beta.2+sha.5114f85"


def test_numeric_order():
    assert Version.parse("1.9.0") < Version.parse("1.10.0")
    assert Version.parse("2.0.0") > Version.parse("1.99.99")


@pytest.mark.parametrize("text", ["1.2", "01.2.3", "1.2.3-", "v1.2.3"])
def test_invalid(text):
    with pytest.raises(ValueError):
        Version.parse(text)
