from verspec import Version, max_version, satisfies


def test_satisfies():
    assert satisfies("1.4.0", ">=1.2.0,<2.0.0")
    assert not satisfies("2.0.0", ">=1.2.0,<2.0.0")
    assert satisfies("1.0.1", "!=1.0.0")


def test_max_version():
    assert max_version(["1.0.0", "1.10.0", "1.9.3"]) == Version.parse("1.10.0")
    assert max_version(["1.0.0", "3.0.0"], "<2.0.0") == Version.parse("1.0.0")
    assert max_version([], None) is None
