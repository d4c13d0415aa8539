"""The viewer's page names: one flat namespace shared by the server and the static site.

Every link is relative, so the pages written by ``gym view --html`` open from disk and
the server answers the same names::

    index.html                      runs
    run-RUN.html                    a run
    episode-EPISODE.html            an episode
    compare-A+B.html                run B against baseline A
    raw/EPISODE/NAME.txt            one whole text of an episode (text/plain)
    plot/NAME.png                   a plot
    static/view.css, view.js        the style sheet and the filter script
"""

from __future__ import annotations

import re

from gym._errors import ConfigError

__all__ = [
    "compare_page",
    "episode_page",
    "plot_name",
    "raw_page",
    "run_page",
    "slug",
    "unslug",
]

_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


def slug(ident: str) -> str:
    """A file-name-safe, reversible form of a stored id (hex ids stay as they are)."""
    if _PLAIN.fullmatch(ident):
        return ident
    return "~" + ident.encode("utf-8", "surrogatepass").hex()


def unslug(text: str) -> str:
    """The id a `slug` came from.

    Raises:
        ConfigError: the text is no slug.
    """
    if _PLAIN.fullmatch(text):
        return text
    try:
        if text.startswith("~"):
            return bytes.fromhex(text[1:]).decode("utf-8", "surrogatepass")
    except ValueError:
        pass
    raise ConfigError(f"{text!r} names no run or episode")


def run_page(run_id: str) -> str:
    """The page of a run."""
    return f"run-{slug(run_id)}.html"


def episode_page(episode_id: str) -> str:
    """The page of an episode."""
    return f"episode-{slug(episode_id)}.html"


def compare_page(run_a: str, run_b: str) -> str:
    """The page of run B compared against baseline A."""
    return f"compare-{slug(run_a)}+{slug(run_b)}.html"


def raw_page(episode_id: str, name: str) -> str:
    """One whole text of an episode (``prompt``, ``diff``, ``step-3-observation``...)."""
    return f"raw/{slug(episode_id)}/{name}.txt"


def plot_name(kind: str, *ids: str) -> str:
    """A plot of a run (``pass1``, ``passk``) or of a comparison (``scatter``)."""
    return f"plot/{kind}-{'+'.join(slug(i) for i in ids)}.png"
