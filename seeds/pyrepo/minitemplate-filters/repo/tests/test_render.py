import pytest

from minitpl import TemplateError, render


class User:
    def __init__(self, name):
        self.name = name


def test_plain_and_dotted():
    ctx = {"user": User("Ada"), "site": {"title": "Docs"}, "n": 3}
    assert render("Hi {{ user.name }} on {{site.title}} ({{ n }})", ctx) == "Hi Ada on Docs (3)"


def test_no_tags():
    assert render("just text", {}) == "just text"


def test_undefined():
    with pytest.raises(TemplateError):
        render("{{ missing }}", {})


def test_bad_syntax():
    with pytest.raises(TemplateError):
        render("{{ 1bad }}", {})
    with pytest.raises(TemplateError):
        render("oops {{ name", {"name": "x"})
