from envfile import load, parse


def test_parse_basic():
    text = "# settings\nHOST = example.org\n\nPORT=8080\nEMPTY=\n"
    assert parse(text) == {"HOST": "example.org", "PORT": "8080", "EMPTY": ""}


def test_later_wins():
    assert parse("A=1\nA=2\n") == {"A": "2"}


def test_load(tmp_path):
    path = tmp_path / ".env"
    path.write_text("A=1\nB=2\n", encoding="utf-8")
    env = {"A": "keep"}
    assert load(path, env) == ["B"]
    assert env == {"A": "keep", "B": "2"}
    assert load(path, env, override=True) == ["A", "B"]
    assert env["A"] == "1"
