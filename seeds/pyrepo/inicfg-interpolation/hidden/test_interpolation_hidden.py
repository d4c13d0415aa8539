import pytest

from cfgtool import InterpolationError, load_config

TEXT = """
[paths]
root = /srv/${app:name}
data = ${root}/data
logs = ${ROOT}/logs
price = $$5 and $HOME and $

[App]
Name = shop
port = 80${app:digit}
digit = 8
debug = ${flags:debug}

[flags]
debug = yes
"""


def test_same_section_and_recursive():
    cfg = load_config(TEXT)
    assert cfg.get("paths", "root") == "/srv/shop"
    assert cfg.get("paths", "data") == "/srv/shop/data"
    assert cfg.get("PATHS", "logs") == "/srv/shop/logs"


def test_dollars():
    assert load_config(TEXT).get("paths", "price") == "$5 and $HOME and $"


def test_typed_getters_interpolate():
    cfg = load_config(TEXT)
    assert cfg.get_int("app", "port") == 808
    assert cfg.get_bool("app", "debug") is True


def test_raw_and_default():
    cfg = load_config(TEXT)
    assert cfg.raw("paths", "data") == "${root}/data"
    assert cfg.get("paths", "nope", "${root}") == "${root}"
    with pytest.raises(KeyError):
        cfg.raw("paths", "nope")


def test_missing_reference():
    cfg = load_config("[a]\nx = ${y}\nz = ${b:q}\n")
    with pytest.raises(InterpolationError):
        cfg.get("a", "x")
    with pytest.raises(InterpolationError):
        cfg.get("a", "z")
    assert issubclass(InterpolationError, ValueError)


def test_cycles():
    cfg = load_config("[a]\nself = <${self}>\nx = ${b:y}\n[b]\ny = ${a:x}\nok = fine\n")
    for key in ("self", "x"):
        with pytest.raises(InterpolationError):
            cfg.get("a", key)
    assert cfg.get("b", "ok") == "fine"


def test_diamond_is_not_a_cycle():
    cfg = load_config("[a]\nbase = b\nleft = ${base}1\nright = ${base}2\ntop = ${left}${right}\n")
    assert cfg.get("a", "top") == "b1b2"
