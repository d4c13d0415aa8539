"""Hostile text made printable, and big text cut (pure functions)."""

import pytest

from gym import ConfigError
from gym._view._links import slug, unslug
from gym._view._text import clean, plain, snippet


def test_lone_surrogates_become_replacement_characters_and_pairs_survive():
    text = "a\udcffb \ud83d\ude00"  # a lone low surrogate, then a valid pair (an emoji)
    assert plain(text) == "a\ufffdb \U0001f600"
    plain(text).encode("utf-8")  # encodable now


def test_terminal_escapes_are_dropped_and_controls_are_shown():
    text = "\x1b[31mred\x1b[0m \x1b]0;title\x07bell\x00nul\x7f \u202eevil\r\nnext\rover"
    assert clean(text) == "red bell\\x00nul\\x7f \\u202eevil\nnext\nover"


def test_clean_is_idempotent_and_leaves_markup_alone():
    text = "<script>alert(1)</script> \x1b[1mbold\x1b[0m \x01"
    once = clean(text)
    assert clean(once) == once
    assert "<script>alert(1)</script>" in once  # escaping is the template engine's job


def test_snippet_cuts_by_characters_and_by_lines_and_links_the_rest():
    long = snippet("x" * 50_000, "raw/e/step-1-observation.txt")
    assert len(long.text) == 20_000 and long.more == 30_000
    assert long.raw == "raw/e/step-1-observation.txt"
    many = snippet("line\n" * 1000, "r.txt")
    assert many.text.count("\n") == 399 and many.more == 5000 - len(many.text)
    short = snippet("fine", "r.txt")
    assert (short.text, short.more, short.raw) == ("fine", 0, "")


@pytest.mark.parametrize("ident", ["0123abcd", "run.1_x-y", "a/b", "../etc", "é", "x" * 150, ""])
def test_slugs_are_file_names_and_reversible(ident):
    s = slug(ident)
    assert "/" not in s and not s.startswith(".") and s
    assert unslug(s) == ident


def test_a_bad_slug_is_refused():
    with pytest.raises(ConfigError):
        unslug("~zz")


def test_every_bidirectional_control_is_shown_as_an_escape():
    """Issue 28, defect 10: marks, embeddings, overrides and isolates; line separators."""
    controls = (
        "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"
    )
    shown = clean(f"a{controls}b")
    assert shown == "a" + "".join(f"\\u{ord(c):04x}" for c in controls) + "b"
    assert clean("naïve café 日本 \U0001f600") == "naïve café 日本 \U0001f600"  # text stays
