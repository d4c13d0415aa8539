from cfgtool import load_config

TEXT = """
[server]
host = example.org
port = 8080
debug = off
"""


def test_get():
    cfg = load_config(TEXT)
    assert cfg.get("Server", "HOST") == "example.org"
    assert cfg.get("server", "missing", "x") == "x"
    assert cfg.get("nope", "host") is None


def test_typed():
    cfg = load_config(TEXT)
    assert cfg.get_int("server", "port") == 8080
    assert cfg.get_bool("server", "debug") is False
    assert cfg.sections() == ["server"]
    assert cfg.keys("server") == ["debug", "host", "port"]
