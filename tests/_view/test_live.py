"""A running run's page keeps itself up to date: its status endpoint and what it reloads."""

from __future__ import annotations

import json

import viewdata

from gym._store import Store
from gym._view import Site
from gym._view._links import run_page, status_api


def status(site: Site, run_id: str) -> dict:
    return json.loads(site.page(status_api(run_id)).body)


def test_the_status_changes_version_when_an_episode_is_stored_not_on_a_heartbeat(tmp_path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    writer = Store(url)
    run = viewdata.add_run(writer, "r0running00001", {"is-prime": "P"}, planned=4, finished=False)
    site = Site(Store(url, read_only=True))

    first = status(site, run.id)
    assert (first["state"], first["live"], first["episodes"], first["planned"]) == (
        "running",
        True,
        1,
        4,
    )
    assert first["label"] == "running 1/4" and first["summary"].startswith(
        "1 of 4 planned; running"
    )
    writer.heartbeat(run.id)
    assert status(site, run.id)["version"] == first["version"]

    viewdata.add_episode(writer, run, "gcd-of-list", 0, passed=False)
    second = status(site, run.id)
    assert second["version"] != first["version"]
    assert (second["episodes"], second["passed"], second["failed"]) == (2, 1, 1)

    writer.end_run(run.id, "stopped", "Ctrl-C")
    third = status(site, run.id)
    assert (third["state"], third["live"]) == ("stopped", False)
    assert third["summary"].startswith("2 of 4 planned; stopped by Ctrl-C at")
    assert third["version"] != second["version"]


def test_a_running_run_page_asks_to_be_polled_and_says_so(tmp_path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    writer = Store(url)
    run = viewdata.add_run(writer, "r0running00001", {}, planned=4, finished=False)
    body = Site(Store(url, read_only=True)).page(run_page(run.id)).body.decode()
    assert 'data-state="running"' in body and "updates itself while the run runs" in body
    assert '<span class="badge status running"' in body and ">running 0/4<" in body
    assert "No plot yet: no episode has been graded." in body
    assert "(0 of 4 planned episodes so far)" in body
