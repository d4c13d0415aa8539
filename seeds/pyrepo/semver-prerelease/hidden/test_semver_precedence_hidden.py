from verspec import Version, max_version, satisfies

V = Version.parse


def test_spec_example_chain():
    chain = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
    ]
    versions = [V(t) for t in chain]
    for low, high in zip(versions, versions[1:]):
        assert low < high and high > low and not high < low
    assert [str(v) for v in sorted(reversed(versions))] == chain


def test_release_above_prerelease():
    assert V("1.0.0-rc.1") < V("1.0.0")
    assert V("1.0.0") > V("1.0.0-zzz")
    assert V("1.0.0-rc.1") > V("0.9.9")


def test_numeric_identifiers():
    assert V("1.0.0-rc.2") < V("1.0.0-rc.10")
    assert V("1.0.0-2") < V("1.0.0-10")
    assert V("1.0.0-99") < V("1.0.0-a")
    assert V("1.0.0-a-b") < V("1.0.0-a1")


def test_build_metadata_ignored():
    a, b = V("1.0.0+build.5"), V("1.0.0+build.6")
    assert a == b == V("1.0.0")
    others = ["1.0.0+x", "1.0.1", "1.0.0-rc.1", "2.0.0+build.5", "1.0.0"]
    assert [a == V(t) for t in others] == [True, False, False, False, True]
    assert [a != V(t) for t in others] == [False, True, True, True, False]
    assert hash(a) == hash(V("1.0.0"))
    assert not a < b and not b < a
    assert len({a, b, V("1.0.0")}) == 1
    assert a.build == ("build", "5")
    assert str(V("1.0.0-rc.1+exp.sha.5114f85")) == "1.0.0-rc.1+exp.sha.5114f85"


def test_ranges_with_prereleases():
    assert satisfies("2.0.0-rc.1", "<2.0.0")
    assert not satisfies("1.0.0-rc.1", ">=1.0.0")
    assert satisfies("1.2.3+meta", "==1.2.3")
    assert str(max_version(["1.0.0-rc.10", "1.0.0-rc.9", "1.0.0-beta"])) == "1.0.0-rc.10"
    assert str(max_version(["2.0.0", "2.0.0-rc.1", "1.9.0"], "<2.0.0")) == "2.0.0-rc.1"
