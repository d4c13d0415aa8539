"""The viewer's pages by name, rendered with Jinja2 (autoescape on: escaped exactly once).

`Site.page` answers every name of `gym._view._links`; the server serves it and
`write_site` writes it to a folder, so both show the same bytes.
"""

from __future__ import annotations

import functools
import json
import math
import re
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from gym._errors import ConfigError, GymError, StoreError
from gym._report import Metric, Report, build_report
from gym._store import RunRow, Store
from gym._view._episode import episode_view, raw_text
from gym._view._links import compare_page, episode_page, plot_name, run_page, unslug
from gym._view._runs import (
    RunLink,
    RunsPage,
    compare_view,
    lineage,
    pair,
    run_view,
    shares_env,
    when,
)
from gym._view._text import clean, plain

__all__ = ["CSP", "NotFound", "Page", "Site", "safe_url", "write_site"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'self'"
)
"""The pages' Content-Security-Policy: no inline script or style, nothing from elsewhere."""

MAX_COMPARE = 12
"""Comparison links per run page (the most recent other runs)."""


class NotFound(GymError):
    """No page has that name."""


class Page(NamedTuple):
    """A rendered page."""

    body: bytes
    type: str
    """Its media type (with charset for text)."""


def safe_url(url: str) -> str:
    """A store URL with its password hidden."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return "(unparsable store URL)"


def _ci(m: Metric) -> str:
    if math.isnan(m.value):
        return "-"
    return f"{m.value:.2f} [{m.lo:.2f}, {m.hi:.2f}]"


def _finalize(value: Any) -> Any:
    """Every printed value: strings cleaned (`clean`), then autoescaped by Jinja2.

    Markup (a macro's output) was built from values that went through here already.
    """
    from markupsafe import Markup

    if value is None:
        return ""
    if isinstance(value, str) and not isinstance(value, Markup):
        return clean(value)
    return value


@functools.cache
def _templates() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gym._view", "templates"),
        autoescape=True,
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters |= {
        "ci": _ci,
        "when": when,
        "short": lambda s: str(s)[:12],
        "num": lambda v, d=2: "-" if v is None or v != v else f"{v:.{d}f}",
        "noboxgym": lambda s: str(s).removeprefix("boxgym/"),
        "pretty": lambda v: json.dumps(v, indent=2, ensure_ascii=False, default=str),
    }
    env.globals |= {"csp": CSP}
    return env


def _html(template: str, **data: Any) -> Page:
    body = _templates().get_template(template).render(**data)
    return Page(plain(body).encode("utf-8"), "text/html; charset=utf-8")


class Site:
    """The pages of the runs in view.

    Args:
        store: the run store (open it with ``read_only=True``).
        runs: ids (or unique prefixes) of the runs in view; every run when None.
    """

    def __init__(self, store: Store, runs: Sequence[str] | None = None) -> None:
        self.store = store
        self.scope = {store.run(r).id for r in runs} if runs else None
        self.db = safe_url(store.url)
        self._reports: dict[tuple[str, float], Report] = {}
        self._lock = threading.Lock()
        self._routes: list[tuple[re.Pattern[str], Callable[..., Page]]] = [
            (re.compile(r"(?:index\.html)?"), self._index),
            (re.compile(r"run-([^/+]+)\.html"), self._run),
            (re.compile(r"episode-([^/+]+)\.html"), self._episode),
            (re.compile(r"compare-([^/+]+)\+([^/+]+)\.html"), self._compare),
            (re.compile(r"raw/([^/+]+)/([a-z0-9-]+)\.txt"), self._raw),
            (re.compile(r"plot/(pass1|passk)-([^/+]+)\.png"), self._run_plot),
            (re.compile(r"plot/scatter-([^/+]+)\+([^/+]+)\.png"), self._scatter),
            (re.compile(r"static/(view\.css|view\.js)"), self._static),
        ]

    def runs(self) -> list[RunRow]:
        """The runs in view, newest first."""
        rows = self.store.runs()
        return rows if self.scope is None else [r for r in rows if r.id in self.scope]

    def run(self, slug: str) -> RunRow:
        """A run in view by the slug of its exact id."""
        run_id = unslug(slug)
        found = [r for r in self.runs() if r.id == run_id]
        if not found:
            raise NotFound(f"no run {run_id!r} in view")
        return found[0]

    def report(self, run: RunRow) -> Report:
        """The run's report (computed once per committed state of the run)."""
        key = (run.id, run.updated_at)
        with self._lock:
            cached = self._reports.get(key)
        if cached is None:
            cached = build_report(self.store, run.id)
            with self._lock:
                self._reports[key] = cached
        return cached

    def page(self, name: str) -> Page:
        """The page of a name (see `gym._view._links`).

        Raises:
            NotFound: no page has that name, or it names something out of view.
            GymError: the store could not answer.
        """
        for pattern, handler in self._routes:
            match = pattern.fullmatch(name)
            if match:
                try:
                    return handler(*match.groups())
                except (ConfigError, StoreError) as exc:
                    if exc.__cause__ is not None:  # the database failed: not a missing page
                        raise
                    raise NotFound(str(exc)) from exc
        raise NotFound(f"no page {name!r}")

    def _index(self) -> Page:
        links = [
            RunLink(run=r, href=run_page(r.id), report=self.report(r), lineage=lineage(r))
            for r in self.runs()
        ]
        return _html("runs.html", page=RunsPage(runs=links, db=self.db), db=self.db)

    def _run(self, slug: str) -> Page:
        run = self.run(slug)
        others = [r for r in self.runs() if r.id != run.id][:MAX_COMPARE]
        page = run_view(self.store, run, self.report(run), others, self.db)
        return _html("run.html", page=page, db=self.db)

    def _episode(self, slug: str) -> Page:
        page = episode_view(self.store, unslug(slug))
        self.run(page.run.id)  # in view?
        return _html("episode.html", page=page, db=self.db)

    def _compare(self, slug_a: str, slug_b: str) -> Page:
        page = compare_view(self.store, self.run(slug_a), self.run(slug_b))
        return _html("compare.html", page=page, db=self.db)

    def _raw(self, slug: str, name: str) -> Page:
        episode_id = unslug(slug)
        self.run(self.store.episode(episode_id).run_id)
        text = plain(raw_text(self.store, episode_id, name))
        return Page(text.encode("utf-8"), "text/plain; charset=utf-8")

    def _run_plot(self, kind: str, slug: str) -> Page:
        from gym._plot import pass_at_1_figure, pass_at_k_figure, png_bytes

        draw = pass_at_1_figure if kind == "pass1" else pass_at_k_figure
        return Page(png_bytes(draw(self.report(self.run(slug)))), "image/png")

    def _scatter(self, slug_a: str, slug_b: str) -> Page:
        from gym._plot import png_bytes, scatter_figure
        from gym._report import task_scores

        a, b = self.run(slug_a), self.run(slug_b)
        fig = scatter_figure(
            task_scores(self.store, a.id),
            task_scores(self.store, b.id),
            label_a=a.label or a.id[:12],
            label_b=b.label or b.id[:12],
        )
        return Page(png_bytes(fig), "image/png")

    def _static(self, name: str) -> Page:
        data = resources.files("gym._view").joinpath("static", name).read_bytes()
        kind = "text/css" if name.endswith(".css") else "text/javascript"
        return Page(data, f"{kind}; charset=utf-8")


def _names(site: Site) -> list[str]:
    names = ["index.html", "static/view.css", "static/view.js"]
    runs = site.runs()
    for run in runs:
        names += [run_page(run.id), plot_name("pass1", run.id), plot_name("passk", run.id)]
        names += [episode_page(e.id) for e in site.store.episodes(run.id)]
    pairs = {
        (x.id, y.id)
        for x, y in (pair(a, b) for a in runs for b in runs if a.id != b.id and shares_env(a, b))
    }
    for a_id, b_id in sorted(pairs):
        names += [compare_page(a_id, b_id), plot_name("scatter", a_id, b_id)]
    return names


def _write(folder: Path, name: str, body: bytes) -> None:
    target = folder / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(body)


def write_site(site: Site, folder: Path) -> int:
    """Write every page of the runs in view under a folder; returns the files written.

    The pages link to each other by relative names, so the folder opens from disk.
    """
    written = 0
    for name in _names(site):
        if not name.startswith("episode-"):
            _write(folder, name, site.page(name).body)
            written += 1
            continue
        data = episode_view(site.store, unslug(name.removeprefix("episode-")[: -len(".html")]))
        _write(folder, name, _html("episode.html", page=data, db=site.db).body)
        for raw in sorted(data.raw_links()):
            _write(folder, raw, site.page(raw).body)
        written += 1 + len(data.raw_links())
    return written
