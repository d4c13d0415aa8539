"""The viewer in a real browser: Debian's headless Chromium, driven through Playwright.

runs -> run -> episode -> comparison, asserting on what a person sees, with screenshots
saved under the test's tmp dir; the hostile episode must show its script as text.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import viewdata

from gym._report import build_report
from gym._store import Store
from gym._view import Site, serve, write_site
from gym._view._links import compare_page, episode_page, run_page

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            "Chromium is missing: install Debian's chromium package (scripts/test.sh does), "
            "or deselect with -m 'not browser'"
        )
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        yield context
        context.close()


@pytest.fixture(scope="module")
def viewer(stored):
    store = Store(stored, read_only=True)
    running = serve(Site(store))
    yield running
    running.close()
    store.close()


@pytest.fixture
def page(browser):
    tab = browser.new_page()
    tab.dialogs = []
    tab.on("dialog", lambda d: (tab.dialogs.append(d.message), d.dismiss()))
    yield tab
    tab.close()


def loaded_width(page, selector: str) -> int:
    """The natural width of an image once loaded (polled: the CSP forbids wait_for_function's eval)."""
    image = page.locator(selector)
    for _ in range(150):
        width = image.evaluate("i => i.complete ? i.naturalWidth : -1")
        if width >= 0:
            return int(width)
        page.wait_for_timeout(200)
    return -1


def shot(page, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000


def _pass_at_1_cell(stored: str, run_id: str) -> str:
    """What the run page's first interval cell must read: the report's pass@1, 2 places."""
    store = Store(stored, read_only=True)
    try:
        g = build_report(store, run_id).envs[0].pass_at_1
    finally:
        store.close()
    return f"{g.value:.2f} [{g.lo:.2f}, {g.hi:.2f}]"


def test_runs_run_episode_comparison(page, viewer, stored, tmp_path):
    page.goto(viewer.url)
    assert page.locator("h1").inner_text() == "Runs"
    assert page.get_by_text("candidate <b>bold</b>").is_visible()  # a label, shown as text
    shot(page, tmp_path, "runs")

    page.click(f"a[href='{run_page(viewdata.RUN_B)}']")
    shown = page.locator("td.ci").first.inner_text()
    assert shown == _pass_at_1_cell(stored, viewdata.RUN_B) and shown.startswith("0.62 [")
    assert loaded_width(page, "img[src^='plot/pass1-']") > 300
    page.select_option("select[name=outcome]", "fail")
    assert page.locator("#shown").inner_text() == "3 of 8 episodes"
    assert page.locator("table.episodes tbody tr:visible").count() == 3
    page.fill("input[name=task]", "gcd")
    assert page.locator("#shown").inner_text() == "2 of 8 episodes"
    assert "outcome=fail" in page.url and "task=gcd" in page.url
    shot(page, tmp_path, "run-filtered")

    page.click(f"table.episodes a[href='{episode_page('b0gcdxof0')}']")
    assert page.locator("h1").inner_text().startswith("gcd-of-list")
    assert page.get_by_text("Writing the solution for gcd-of-list.").is_visible()
    flag = page.locator("table.flags tr", has_text="tests_touched")
    assert flag.locator("a").inner_text() == "step 1"
    flag.locator("a").click()
    assert page.url.endswith("#step-1")
    assert "tests/test_solution.py" in page.locator("#step-1").inner_text()
    shot(page, tmp_path, "episode")

    page.goto(viewer.url + run_page(viewdata.RUN_B))
    # the link's target, then that page (a click here once missed the link, the page
    # staying on the run page: nothing the viewer did, so the test follows the href)
    href = page.locator("ul.compare a").first.get_attribute("href")
    assert href == compare_page(viewdata.RUN_A, viewdata.RUN_B)
    page.goto(viewer.url + href)
    assert "pass@1 went from 0.625 to 0.625" in page.locator("p.headline").inner_text()
    assert page.locator("td.n.regressed").inner_text() == "1"
    assert page.locator("tr.regressed").inner_text().split("\t")[1] == "gcd-of-list"
    shot(page, tmp_path, "compare")
    assert page.dialogs == []


def test_hostile_model_output_shows_as_text_and_never_runs(page, viewer, tmp_path):
    page.goto(viewer.url + episode_page(viewdata.hostile_id()))
    said = page.locator("#step-0 pre.said").inner_text()
    assert said == "<script>alert(1)</script><img src=x onerror=alert(2)> red \ufffd end"
    scripts = page.evaluate("[...document.scripts].map(s => s.getAttribute('src'))")
    assert scripts == ["static/view.js"]
    assert page.evaluate("document.querySelectorAll('img[onerror]').length") == 0
    assert page.get_by_text("10,465,760 more characters not shown").is_visible()
    page.wait_for_timeout(300)  # a dialog, had one been opened, would have fired by now
    assert page.dialogs == []
    shot(page, tmp_path, "hostile")


def test_the_static_site_works_from_disk(page, stored, tmp_path):
    store = Store(stored, read_only=True)
    write_site(Site(store, [viewdata.RUN_B]), tmp_path / "site")
    page.goto((tmp_path / "site" / run_page(viewdata.RUN_B)).as_uri() + "?outcome=fail")
    assert page.locator("#shown").inner_text() == "3 of 8 episodes"
    assert page.locator("header.top").evaluate("e => getComputedStyle(e).display") == "flex"
    page.click("table.episodes tbody tr:visible a >> nth=0")
    assert page.locator("h1 .badge").inner_text() == "fail"
