"""The viewer's page names: one flat namespace shared by the server and the static site.

Every link is relative, so the pages written by ``gym view --html`` open from disk and
the server answers the same names::

    index.html                      runs
    run-RUN.html                    a run
    episode-EPISODE.html            an episode
    compare-A+B.html                run B against baseline A
    train-TRAIN.html                a training run (`gym train`), step by step
    search.html?q=WORDS             episodes of every run in view that match (server only)
    raw/EPISODE/NAME.txt            one whole text of an episode (text/plain)
    plot/NAME.png                   a plot
    api/run/RUN/status.json         a run's status, polled by its page (server only)
    api/search.json?q=WORDS&run=RUN the ids of a run's matching episodes (server only)
    static/view.css, view.js        the style sheet and the page script
    static/favicon.svg              the icon (favicon.ico answers the same)
"""

from __future__ import annotations

import re

from gym._core._errors import ConfigError

__all__ = [
    "compare_page",
    "episode_page",
    "plot_name",
    "raw_page",
    "run_page",
    "search_api",
    "search_page",
    "slug",
    "status_api",
    "train_page",
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


def train_page(train_id: str) -> str:
    """The page of a training run (its steps)."""
    return f"train-{slug(train_id)}.html"


def status_api(run_id: str) -> str:
    """A run's status as JSON (served, never written as a file)."""
    return f"api/run/{slug(run_id)}/status.json"


SEARCH = "search.html"
"""The search page (served, never written as a file)."""
SEARCH_API = "api/search.json"
"""Matching episode ids as JSON (served, never written as a file)."""


def search_page(query: str) -> str:
    """The search page of a query."""
    from urllib.parse import urlencode

    return f"{SEARCH}?{urlencode({'q': query})}"


def search_api(run_id: str) -> str:
    """The search endpoint of one run, without its ``q`` (the page script adds it)."""
    from urllib.parse import urlencode

    return f"{SEARCH_API}?{urlencode({'run': slug(run_id)})}"
