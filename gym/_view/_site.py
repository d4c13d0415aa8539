"""The viewer's pages by name, rendered with Jinja2 (autoescape on: escaped exactly once).

`Site.page` answers every name of `gym._view._links`; the server serves it and
`write_site` writes it to a folder, so both show the same pages (the written copy
without what needs the server: live updates and search).
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
import re
import secrets
import shutil
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from gym._core._errors import ConfigError, GymError, StoreError
from gym._reports._report import Metric, Report, build_report
from gym._store import RunRow, Store
from gym._view._episode import episode_view, raw_text
from gym._view._links import (
    SEARCH,
    compare_page,
    episode_page,
    plot_name,
    run_page,
    train_page,
    unslug,
)
from gym._view._live import live_status
from gym._view._runs import (
    RunLink,
    RunsPage,
    compare_view,
    lineage,
    pair,
    run_plots,
    run_view,
    shares_env,
    when,
)
from gym._view._search import matching_ids, search
from gym._view._text import clean, plain
from gym._view._training import train_links, train_view

__all__ = ["CSP", "NotFound", "Page", "Site", "interval", "safe_url", "write_site"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'"
)
"""The pages' Content-Security-Policy: no inline script or style, nothing from elsewhere
(the page script may fetch this viewer's own JSON: connect-src 'self')."""

STATIC = {
    "view.css": "text/css; charset=utf-8",
    "view.js": "text/javascript; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
"""The files under static/ and their media types."""


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


def interval(m: Metric, n: int | None = None, short: bool = False) -> str:
    """A statistic with its 95% interval, or the reason it has none.

    A bootstrap over one task, or over tasks that all have the same value, gives an
    interval of zero width: that says nothing about the uncertainty, so it is not shown
    as one (``1.00 (n=1, no interval)``).

    Args:
        m: the statistic.
        n: the tasks it was computed over, when known.
        short: in a list of several, only ``(n=1)`` or ``(all equal)`` (the page says why).
    """
    if math.isnan(m.value):
        return "-"
    if math.isnan(m.lo):
        return f"{m.value:.2f} (n={n or 0}, no interval)"
    if m.interval == "bootstrap" and m.lo == m.hi:
        if short:
            return f"{m.value:.2f} ({'n=1' if n is not None and n < 2 else 'all equal'})"
        if n is not None and n < 2:
            return f"{m.value:.2f} (n={n}, no interval)"
        if n is not None:
            return f"{m.value:.2f} (all {n} tasks equal, no interval)"
        return f"{m.value:.2f} (no interval)"
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
        "ci": interval,
        "when": when,
        "short": lambda s: str(s)[:12],
        "num": lambda v, d=2: "-" if v is None or v != v else f"{v:.{d}f}",
        "noboxgym": lambda s: str(s).removeprefix("boxgym/"),
        "pretty": lambda v: json.dumps(v, indent=2, ensure_ascii=False, default=str),
    }
    env.globals |= {"csp": CSP, "search_page": SEARCH}
    return env


def _html(template: str, *, live: bool = True, **data: Any) -> Page:
    """A page from its template (``live``: served, so it may poll and search)."""
    body = _templates().get_template(template).render(live=live, **data)
    return Page(plain(body).encode("utf-8"), "text/html; charset=utf-8")


def _json(data: Any) -> Page:
    body = json.dumps(data, ensure_ascii=False, allow_nan=False)
    return Page(plain(body).encode("utf-8"), "application/json; charset=utf-8")


Query = dict[str, str]
"""A request's query parameters (the first value of each)."""


class Site:
    """The pages of the runs in view.

    Args:
        store: the run store (open it with ``read_only=True``).
        runs: ids (or unique prefixes) of the runs in view; every run when None.
        live: pages for the server (they poll a running run's status and search the
            store); `write_site` writes pages without (a static copy cannot).
    """

    def __init__(
        self, store: Store, runs: Sequence[str] | None = None, *, live: bool = True
    ) -> None:
        self.store = store
        self.scope = {store.run(r).id for r in runs} if runs else None
        self.db = safe_url(store.url)
        self.live = live
        self._reports: dict[tuple[str, float], Report] = {}
        self._lock = threading.Lock()
        # (name, handler, whether it reads the query); handlers unbound, so that a copy
        # of the site (`write_site`'s) answers with its own settings
        self._routes: list[tuple[re.Pattern[str], Callable[..., Page], bool]] = [
            (re.compile(r"(?:index\.html)?"), Site._index, False),
            (re.compile(r"run-([^/+]+)\.html"), Site._run, False),
            (re.compile(r"episode-([^/+]+)\.html"), Site._episode, False),
            (re.compile(r"compare-([^/+]+)\+([^/+]+)\.html"), Site._compare, False),
            (re.compile(r"train-([^/+]+)\.html"), Site._train, False),
            (re.compile(r"raw/([^/+]+)/([a-z0-9-]+)\.txt"), Site._raw, False),
            (re.compile(r"plot/(pass1|passk)-([^/+]+)\.png"), Site._run_plot, False),
            (re.compile(r"plot/scatter-([^/+]+)\+([^/+]+)\.png"), Site._scatter, False),
            (re.compile(r"plot/train-([^/+]+)\.png"), Site._train_plot, False),
            (re.compile(r"static/(view\.css|view\.js|favicon\.svg)"), Site._static, False),
            (re.compile(r"favicon\.ico"), Site._favicon, False),
            (re.compile(r"search(?:\.html)?"), Site._search, True),
            (re.compile(r"api/search\.json"), Site._search_api, True),
            (re.compile(r"api/run/([^/+]+)/status\.json"), Site._status_api, False),
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

    def page(self, name: str, query: Query | None = None) -> Page:
        """The page of a name (see `gym._view._links`), with its query parameters.

        Raises:
            NotFound: no page has that name, or it names something out of view.
            GymError: the store could not answer.
        """
        for pattern, handler, wants_query in self._routes:
            match = pattern.fullmatch(name)
            if match:
                args = [*match.groups(), query or {}] if wants_query else list(match.groups())
                try:
                    return handler(self, *args)
                except (ConfigError, StoreError) as exc:
                    if exc.__cause__ is not None:  # the database failed: not a missing page
                        raise
                    raise NotFound(str(exc)) from exc
        raise NotFound(f"no page {name!r}")

    def _html(self, template: str, **data: Any) -> Page:
        return _html(template, live=self.live, db=self.db, **data)

    def _index(self) -> Page:
        runs = self.runs()
        statuses = self.store.run_statuses()
        links = [
            RunLink(
                run=r,
                href=run_page(r.id),
                report=self.report(r),
                status=statuses[r.id],
                lineage=lineage(r),
            )
            for r in runs
            if r.id in statuses
        ]
        trainings = train_links(self.store, self.scope)
        return self._html("runs.html", page=RunsPage(runs=links, trainings=trainings, db=self.db))

    def _run(self, slug: str) -> Page:
        run = self.run(slug)
        page = run_view(self.store, run, self.report(run), self.runs(), self.db)
        return self._html("run.html", page=page)

    def _episode(self, slug: str) -> Page:
        page = episode_view(self.store, unslug(slug))
        self.run(page.run.id)  # in view?
        return self._html("episode.html", page=page)

    def _compare(self, slug_a: str, slug_b: str) -> Page:
        page = compare_view(self.store, self.run(slug_a), self.run(slug_b))
        return self._html("compare.html", page=page)

    def _train(self, slug: str) -> Page:
        train_id = unslug(slug)
        page = train_view(self.store, train_id, self.scope)
        if page is None:
            raise NotFound(f"no training run {train_id!r} in view")
        return self._html("train.html", page=page)

    def _search(self, query: Query) -> Page:
        if not self.live:
            raise NotFound("search needs the server: `gym view` serves it")
        result = search(self.store, query.get("q", ""), runs=self.scope)
        return self._html("search.html", result=result)

    def _search_api(self, query: Query) -> Page:
        run = self.run(query.get("run", ""))
        return _json(matching_ids(self.store, query.get("q", ""), run.id))

    def _status_api(self, slug: str) -> Page:
        return _json(live_status(self.store, self.run(slug)).model_dump(mode="json"))

    def _raw(self, slug: str, name: str) -> Page:
        episode_id = unslug(slug)
        self.run(self.store.episode(episode_id).run_id)
        text = clean(raw_text(self.store, episode_id, name))
        return Page(text.encode("utf-8"), "text/plain; charset=utf-8")

    def _run_plot(self, kind: str, slug: str) -> Page:
        from gym._reports._plot import pass_at_1_figure, pass_at_k_figure, png_bytes

        draw = pass_at_1_figure if kind == "pass1" else pass_at_k_figure
        report = self.report(self.run(slug))
        shown = report.model_copy(update={"label": clean(report.label)})  # a title of the plot
        return Page(png_bytes(draw(shown)), "image/png")

    def _scatter(self, slug_a: str, slug_b: str) -> Page:
        from gym._reports._plot import png_bytes, scatter_figure
        from gym._reports._report import task_scores

        a, b = self.run(slug_a), self.run(slug_b)
        fig = scatter_figure(
            task_scores(self.store, a.id),
            task_scores(self.store, b.id),
            label_a=clean(a.label or a.id[:12]),
            label_b=clean(b.label or b.id[:12]),
        )
        return Page(png_bytes(fig), "image/png")

    def _train_plot(self, slug: str) -> Page:
        from gym._reports._plot import TrainingPoint, png_bytes, training_figure

        page = train_view(self.store, unslug(slug), self.scope)
        if page is None:
            raise NotFound(f"no training run {unslug(slug)!r} in view")
        points = [
            TrainingPoint(
                step=s.row.step,
                mean_reward=s.row.mean_reward,
                pass_rate=s.row.hidden_pass_rate,
                flag_rates=s.row.flag_rates,
                episodes=s.graded,
            )
            for s in page.steps
        ]
        title = f"train {unslug(slug)}"
        return Page(png_bytes(training_figure(points, title=title)), "image/png")

    def _favicon(self) -> Page:
        return self._static("favicon.svg")

    def _static(self, name: str) -> Page:
        data = resources.files("gym._view").joinpath("static", name).read_bytes()
        return Page(data, STATIC[name])


def _names(site: Site) -> list[str]:
    names = ["index.html", *(f"static/{name}" for name in STATIC)]
    runs = site.runs()
    for run in runs:
        names += [run_page(run.id), *run_plots(run.id, site.report(run))]
        names += [episode_page(e.id) for e in site.store.episodes(run.id)]
    pairs = {
        (x.id, y.id)
        for x, y in (pair(a, b) for a in runs for b in runs if a.id != b.id and shares_env(a, b))
    }
    for a_id, b_id in sorted(pairs):
        names += [compare_page(a_id, b_id), plot_name("scatter", a_id, b_id)]
    for t in train_links(site.store, site.scope):
        names += [train_page(t.train_id), plot_name("train", t.train_id)]
    return names


def _write(folder: Path, name: str, body: bytes) -> None:
    target = folder / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(body)


_MARK = ".boxgym-viewer"
"""The file that says a folder holds pages `write_site` wrote (which a new write replaces)."""


def _claim(folder: Path) -> None:
    """Check that ``folder`` may take the pages: new, empty, or one `write_site` wrote before.

    Raises:
        ConfigError: it is a file, or holds files of someone else (an ``index.html`` of
            theirs would be replaced).
    """
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder} is a file; give a folder for the pages")
    mark = folder / _MARK
    if mark.is_symlink() or (mark.exists() and not mark.is_file()):
        raise ConfigError(f"{mark} is not a file gym view wrote; give a new or empty folder")
    if folder.is_dir() and not mark.exists() and any(folder.iterdir()):
        raise ConfigError(
            f"{folder} holds files that gym view did not write (the pages would replace its "
            "index.html); give a new or empty folder"
        )


def write_site(site: Site, folder: Path) -> int:
    """Write every page of the runs in view under a folder; returns the files written.

    The pages link to each other by relative names, so the folder opens from disk. They
    are a copy: no live update, no search of the store (the pages say so). The folder
    is new, empty, or one written here before (`_claim`): each new page replaces the
    page of its name there, and every other file in it stays. Every page is made in a
    hidden folder inside it first (its own file system, whatever is mounted there),
    then moved into place: a page that fails leaves the folder as it was.
    """
    _claim(folder)
    folder = folder.resolve()
    made = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    staged = folder / f".boxgym-{secrets.token_hex(4)}.new"
    try:
        written = _write_pages(site, staged)
        _move_in(staged, folder)
    except BaseException:
        if made:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return written


def _write_pages(site: Site, folder: Path) -> int:
    """Write the mark and every page into ``folder``; the files written."""
    site = copy.copy(site)
    site.live = False
    _write(folder, _MARK, b"pages written by gym view --html\n")
    written = 1  # the mark
    for name in _names(site):
        if not name.startswith("episode-"):
            _write(folder, name, site.page(name).body)
            written += 1
            continue
        data = episode_view(site.store, unslug(name.removeprefix("episode-")[: -len(".html")]))
        _write(folder, name, site._html("episode.html", page=data).body)
        for raw in sorted(data.raw_links()):
            _write(folder, raw, site.page(raw).body)
        written += 1 + len(data.raw_links())
    return written


def _move_in(staged: Path, folder: Path) -> None:
    """Move each entry of ``staged`` to its name in ``folder``, replacing what has it.

    A folder of the same name takes the staged folder's entries the same way; nothing
    else in ``folder`` is touched.
    """
    for entry in sorted(staged.iterdir()):
        target = folder / entry.name
        if entry.is_dir() and target.is_dir() and not target.is_symlink():
            _move_in(entry, target)
        else:
            os.replace(entry, target)
