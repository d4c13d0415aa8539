"""The episode page's lineage: where a forked episode comes from, and its branches.

Episodes are written through the real Store (`commit_episode(..., lineage=...)`), as
`env.fork` writes its branches; the pages are rendered by the real Site.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import viewdata
from markupsafe import escape
from test_pages import parse, text_of

from gym._store import Store
from gym._store._lineage import LineageRow
from gym._view import Site
from gym._view._episode import episode_view
from gym._view._links import episode_page

RUN = "f0forkrun00001"
HOSTILE = 'br<script>alert("x")</script>&'
"""A branch id holding markup: it must be shown as text, escaped once."""
GONE = "gone<i>parent</i>"
"""A parent that is not stored."""


def _commit(store: Store, run, eid: str, passed: bool, lineage: LineageRow | None) -> str:
    episode, steps, verdict = viewdata._episode(run, "is-prime", 0, passed, False)
    episode.id = eid
    for step in steps:
        step.episode_id = eid
    verdict.episode_id = eid
    store.commit_episode(episode, steps, verdict, lineage=lineage)
    return eid


def _fork(parent: str, step: int, branch: int) -> LineageRow:
    return LineageRow(episode_id="", parent_id=parent, fork_step=step, branch=branch)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    url = f"sqlite:///{tmp_path_factory.mktemp('lineage') / 'runs.db'}"
    writer = Store(url)
    run = viewdata.new_run(RUN)
    writer.start_run(run, planned=7)
    _commit(writer, run, "parent0", True, None)
    _commit(writer, run, "branch0", True, _fork("parent0", 1, 0))
    _commit(writer, run, "branch1", False, _fork("parent0", 1, 1))
    _commit(writer, run, HOSTILE, False, _fork("parent0", 2, 0))
    _commit(writer, run, "grandchild", True, _fork("branch0", 2, 0))
    _commit(writer, run, "orphan", True, _fork(GONE, 1, 3))
    _commit(writer, run, "plain", True, None)
    writer.end_run(RUN, "finished")
    writer.close()
    reader = Store(url, read_only=True)
    yield reader
    reader.close()


@pytest.fixture(scope="module")
def site(store: Store) -> Site:
    return Site(store)


def test_the_parent_lists_its_branches_as_a_tree(store, site):
    page = episode_view(store, "parent0")
    assert page.forked_from is None
    rows = [(b.episode_id, b.fork_step, b.branch, b.outcome, b.branches) for b in page.branches]
    assert rows == [
        ("branch0", 1, 0, "pass", 1),
        ("branch1", 1, 1, "fail", 0),
        (HOSTILE, 2, 0, "fail", 0),
    ]
    body = text_of(site.page(episode_page("parent0")))
    hrefs = [a.get("href") for t, a in parse(body).tags if t == "a"]
    for branch in ("branch0", "branch1", HOSTILE):
        assert episode_page(branch) in hrefs
    assert "Branches (3)" in body
    assert hrefs.count("#step-1") >= 1 and "#step-2" in hrefs  # the fork steps, on this page


def test_a_branch_says_where_it_was_forked_from_with_a_link(store, site):
    page = episode_view(store, "branch0")
    fork = page.forked_from
    assert fork is not None and (fork.parent_id, fork.fork_step, fork.branch) == ("parent0", 1, 0)
    assert fork.parent_href == episode_page("parent0") + "#step-1"
    body = text_of(site.page(episode_page("branch0")))
    shown = " ".join("".join(parse(body).text).split())
    assert "forked from episode parent0 (is-prime) at step 1 (branch 0)" in shown
    hrefs = [a.get("href") for t, a in parse(body).tags if t == "a"]
    assert episode_page("parent0") + "#step-1" in hrefs
    assert episode_page("grandchild") in hrefs and "Branches (1)" in body  # its own branch


def test_markup_in_ids_is_escaped_exactly_once(site):
    ours = [{"src": "static/view.js", "defer": None}]
    body = text_of(site.page(episode_page(HOSTILE)))
    assert [a for t, a in parse(body).tags if t == "script"] == ours
    parent = text_of(site.page(episode_page("parent0")))
    assert str(escape(HOSTILE)) in parent and "&amp;lt;" not in parent
    assert [a for t, a in parse(parent).tags if t == "script"] == ours
    assert HOSTILE in "".join(parse(parent).text)  # shown as the text it is


def test_a_parent_that_is_not_stored_is_named_without_a_link(store, site):
    fork = episode_view(store, "orphan").forked_from
    assert fork is not None and fork.parent_href == "" and fork.parent_id == GONE
    body = text_of(site.page(episode_page("orphan")))
    assert "gone&lt;i&gt;parent&lt;/i&gt;" in body and "(not stored)" in body
    assert not [a for t, a in parse(body).tags if t == "i"]


def test_an_episode_without_lineage_shows_none(store, site):
    page = episode_view(store, "plain")
    assert page.forked_from is None and page.branches == []
    body = text_of(site.page(episode_page("plain")))
    assert "forked from" not in body and "Branches (" not in body
