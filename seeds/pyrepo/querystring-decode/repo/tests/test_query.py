from urlkit import build_query, parse_query, split_url


def test_build():
    assert build_query({"q": ["a b"], "lang": "é"}) == "q=a+b&lang=%C3%A9"
    assert build_query({"x": ["1", "2"]}) == "x=1&x=2"


def test_parse_simple():
    assert parse_query("?a=1&b=two") == {"a": ["1"], "b": ["two"]}
    assert parse_query("") == {}


def test_split_url():
    assert split_url("/search?a=1#top") == ("/search", {"a": ["1"]}, "top")
    assert split_url("/plain") == ("/plain", {}, "")
