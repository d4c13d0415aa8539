import pytest

import minitpl
from minitpl import TemplateError, render


def test_string_filters():
    ctx = {"name": "  ada lovelace "}
    assert render("{{ name|strip|title }}", ctx) == "Ada Lovelace"
    assert render("{{name | strip | upper}}!", ctx) == "ADA LOVELACE!"
    assert render("{{ n|lower }}", {"n": 42}) == "42"


def test_length_and_join():
    ctx = {"items": ["a", "b", 3]}
    assert render("{{ items|length }} items: {{ items|join:\", \" }}", ctx) == "3 items: a, b, 3"
    assert render("{{ items | join : \"-\" | upper }}", ctx) == "A-B-3"


def test_truncate():
    ctx = {"t": "abcdefghij"}
    assert render("{{ t|truncate:4 }}", ctx) == "abcd..."
    assert render("{{ t|truncate:10 }}", ctx) == "abcdefghij"
    assert render("{{ n|truncate:2 }}", {"n": 12345}) == "12..."


def test_default():
    assert render('{{ missing|default:"anon" }}', {}) == "anon"
    assert render('{{ user.nick|default:"anon"|upper }}', {"user": {}}) == "ANON"
    assert render('{{ v|default:"x" }}', {"v": None}) == "x"
    assert render('{{ v|default:"x" }}', {"v": ""}) == "x"
    assert render('{{ v|default:"x" }}', {"v": 0}) == "0"
    assert render('{{ v|default:"a|b" }}', {}) == "a|b"


def test_undefined_without_default():
    with pytest.raises(TemplateError):
        render("{{ missing|upper }}", {})


def test_errors():
    for bad in ("{{ x|nosuch }}", "{{ x| }}", '{{ x|truncate:"a }}', "{{ x|truncate:1:2 }}"):
        with pytest.raises(TemplateError):
            render(bad, {"x": "value"})


def test_register_filter():
    minitpl.register_filter("reverse", lambda v: str(v)[::-1])
    minitpl.register_filter("repeat", lambda v, n: str(v) * n)
    assert render("{{ w|reverse }} {{ w|repeat:3 }}", {"w": "ab"}) == "ba ababab"
