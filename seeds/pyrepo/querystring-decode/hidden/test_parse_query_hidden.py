from urlkit import build_query, parse_query, split_url


def test_percent_and_plus():
    assert parse_query("q=a%20b+c&lang=%C3%A9") == {"q": ["a b c"], "lang": ["é"]}
    assert parse_query("na+me=x%2By") == {"na me": ["x+y"]}


def test_bad_escape_kept():
    assert parse_query("p=100%&r=%zz1&s=%4") == {"p": ["100%"], "r": ["%zz1"], "s": ["%4"]}


def test_repeated_keys_in_order():
    result = parse_query("x=1&y=a&x=2&x=3")
    assert result == {"x": ["1", "2", "3"], "y": ["a"]}
    assert list(result) == ["x", "y"]


def test_key_without_value_and_empty_pieces():
    assert parse_query("?debug&a=1&&b=&") == {"debug": [""], "a": ["1"], "b": [""]}
    assert parse_query("&") == {}
    assert parse_query("a==b") == {"a": ["=b"]}


def test_roundtrip():
    data = {
        "q": ["rock & roll", "50% off", "a+b=c"],
        "ключ": ["значение"],
        "empty": [""],
        "emoji": ["😀 ok"],
        "x y": ["?#&="],
    }
    assert parse_query(build_query(data)) == data


def test_split_url_decodes():
    assert split_url("/s?q=caf%C3%A9+au+lait&q=tea#frag") == (
        "/s",
        {"q": ["café au lait", "tea"]},
        "frag",
    )
