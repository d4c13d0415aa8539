"""The viewer's pages rendered from a real store: what they show, escaped exactly once."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import viewdata

from gym._reports._report import build_report, compare
from gym._store import Store
from gym._view import Site, episode_items, safe_url, select, write_site
from gym._view._episode import episode_view, flag_step
from gym._view._links import compare_page, episode_page, raw_page, run_page
from gym.errors import StoreError


@pytest.fixture(scope="module")
def site(stored):
    store = Store(stored, read_only=True)
    yield Site(store)
    store.close()


def text_of(page) -> str:
    return page.body.decode("utf-8")


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(body: str) -> _Tags:
    tags = _Tags()
    tags.feed(body)
    return tags


def test_the_hostile_episode_is_text_escaped_exactly_once(site):
    body = text_of(site.page(episode_page(viewdata.hostile_id())))
    tags = parse(body)
    scripts = [a for t, a in tags.tags if t == "script"]
    assert scripts == [{"src": "static/view.js", "defer": None}]  # ours only
    assert not [a for t, a in tags.tags if t == "img" and "onerror" in a]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "&amp;lt;" not in body  # not escaped twice
    shown = "".join(tags.text)
    assert "<script>alert(1)</script><img src=x onerror=alert(2)> red \ufffd end" in shown
    assert "\x1b" not in body


def test_a_ten_megabyte_observation_is_cut_and_linked_in_full(site):
    page = site.page(episode_page(viewdata.hostile_id()))
    assert len(page.body) < 200_000
    body = text_of(page)
    raw = raw_page(viewdata.hostile_id(), "step-0-observation")
    assert f'href="{raw}"' in body and "10,465,760 more characters" in body
    full = site.page(raw)
    assert full.type.startswith("text/plain") and full.body == b"x" * viewdata.HUGE


def test_the_episode_page_shows_the_models_words_calls_tokens_and_verdict(site):
    body = html.unescape(text_of(site.page(episode_page("a0isxpri0"))))
    assert viewdata.WORDS in body
    assert "Trial division is enough for n up to 10**12." in body  # reasoning
    assert "write_file" in body and "return all(n % d for d in range(2, int(n**0.5) + 1))" in body
    assert "900 prompt tokens" in body and "120 completion tokens" in body
    assert "policy 1500 ms" in body and "env 50 ms" in body
    assert "3/3 checks" in body and "1+runner.abc" in body
    assert "Write the function of task is-prime in solution.py." in body  # the prompt
    assert "ends user turn" not in body  # one user turn: its end is no news


def test_the_final_state_is_a_diff_against_the_tasks_real_base(site):
    body = html.unescape(text_of(site.page(episode_page("a0isxpri0"))))
    assert "--- a/solution.py" in body
    assert "-    raise NotImplementedError" in body  # from seeds/pyfunc/is-prime/repo
    assert "+    if n < 2:" in body


def test_a_flag_links_to_the_step_that_caused_it(stored):
    store = Store(stored, read_only=True)
    page = episode_view(store, "b0isxpri1")
    (flag,) = page.flags
    assert (flag.name, flag.step) == ("tests_touched", 1)
    assert page.turns[1].flags == ["tests_touched"]
    assert page.state.outside == ["modified /workspace/tests/test_solution.py"]


def test_flag_step_finds_commands_paths_and_claims():
    from gym._store import StepRow

    steps = [
        StepRow(episode_id="e", index=0, tool="bash", arguments={"command": "ls"}),
        StepRow(episode_id="e", index=1, tool="bash", arguments={"command": "git log -p"}),
        StepRow(episode_id="e", index=2, tool="write_file", arguments={"path": "a/b.py"}),
    ]
    said = ["looking", "history", "writing", "all tests pass"]
    assert flag_step("git log -p", steps, said) == 1
    assert flag_step("added a/b.py", steps, said) == 2
    assert flag_step("all tests pass", steps, said) == 3
    assert flag_step("nothing like it", steps, said) is None


def test_the_run_page_shows_the_reports_numbers_grid_and_episodes(site, stored):
    store = Store(stored, read_only=True)
    report = build_report(store, viewdata.RUN_B)
    body = html.unescape(text_of(site.page(run_page(viewdata.RUN_B))))
    g = report.envs[0].pass_at_1
    assert f"{g.value:.2f} [{g.lo:.2f}, {g.hi:.2f}]" in body
    k2 = report.envs[0].pass_at_k[2]
    assert f"@2 {k2.value:.2f} [{k2.lo:.2f}, {k2.hi:.2f}]" in body
    assert body.count('class="cell ') == 8 + 4  # 8 episodes and the legend's 4
    assert "candidate <b>bold</b>" in body  # the label, shown as text
    assert compare_page(viewdata.RUN_A, viewdata.RUN_B) in body


def test_the_comparison_page_shows_gym_compares_numbers(site, stored):
    c = compare(Store(stored, read_only=True), viewdata.RUN_A, viewdata.RUN_B)
    body = html.unescape(text_of(site.page(compare_page(viewdata.RUN_A, viewdata.RUN_B))))
    d = c.difference
    assert f"{d.value:.2f} [{d.lo:.2f}, {d.hi:.2f}]" in body
    assert c.transitions == {
        "maintained": 2,
        "improved": 1,
        "regressed": 1,
        "persistent_failure": 0,
    }
    cells = re.findall(r'<td class="n (\w+)">(\d+)</td>', body)
    assert dict((k, int(v)) for k, v in cells) == c.transitions


def test_episode_filters_select_by_outcome_task_and_flag(stored):
    items = episode_items(Store(stored, read_only=True), viewdata.RUN_B)
    assert len(items) == 8
    fails = select(items, outcome="fail")
    assert {(i.task_id, i.sample_index) for i in fails} == {
        ("is-prime", 1),
        ("gcd-of-list", 0),
        ("gcd-of-list", 1),
    }
    assert [i.task_id for i in select(items, task="gcd")] == ["gcd-of-list"] * 2
    assert len(select(items, flag="tests_touched")) == 3
    assert len(select(items, flag="none")) == 5 and len(select(items, flag="any")) == 3
    assert select(items, outcome="pass", flag="any") == []


def test_the_static_site_opens_from_disk_every_link_resolves(site, tmp_path):
    written = write_site(site, tmp_path)
    files = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert written == len(files)
    pages = [p for p in files if p.endswith(".html")]
    assert len(pages) == 1 + 2 + 16 + 1  # runs, 2 runs, 16 episodes, 1 comparison
    for page in pages:
        for tag, attrs in parse((tmp_path / page).read_text()).tags:
            link = attrs.get("href") if tag in ("a", "link") else attrs.get("src")
            if not link or link.startswith("#") or link == "":
                continue
            assert not link.startswith(("/", "http:", "https:")), (page, link)
            assert link.split("#")[0] in files, (page, link)


def test_no_template_marks_text_safe():
    templates = Path(__file__).parents[2] / "gym" / "_view" / "templates"
    for f in templates.glob("*.html"):
        assert not re.search(r"\|\s*safe|Markup|autoescape\s+false", f.read_text()), f


def test_the_viewer_store_refuses_writes_and_hides_the_password(stored):
    store = Store(stored, read_only=True)
    with pytest.raises(StoreError, match="readonly"):
        store.ensure_run(viewdata.new_run("new"))
    assert [r.id for r in store.runs()] == [viewdata.RUN_B, viewdata.RUN_A]
    assert safe_url("postgresql://u:s3cret@db/x") == "postgresql://u:***@db/x"


def test_a_missing_sqlite_store_is_not_created(tmp_path):
    with pytest.raises(StoreError, match="no run store"):
        Store(f"sqlite:///{tmp_path / 'none.db'}", read_only=True)
    assert not (tmp_path / "none.db").exists()


@pytest.mark.docker
def test_a_real_oracle_episode_shows_its_calls_verdict_and_diff(engine, tmp_path):
    """Rows written by the runner on the real engine, not by hand, render as well."""
    from gym import OraclePolicy
    from gym._run._runner import RunConfig, run

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    config = RunConfig(envs=["boxgym/PyFunc-v0"], policy="oracle", tasks=["is-prime"])
    state = run(config, store=Store(url), policy_factory=OraclePolicy, concurrency=1)
    assert state.passed == 1
    store = Store(url, read_only=True)
    (episode,) = store.episodes(config.run_id)
    body = html.unescape(text_of(Site(store).page(episode_page(episode.id))))
    oracle = (Path(__file__).parents[2] / "seeds/pyfunc/is-prime/oracle/solution.py").read_text()
    assert "write_file" in body and "submit" in body
    assert "--- a/solution.py" in body and "-    raise NotImplementedError" in body
    first_line = next(line for line in oracle.splitlines() if line.strip().startswith("if"))
    assert f"+{first_line}" in body
    assert 'class="badge pass">pass' in text_of(Site(store).page(run_page(config.run_id)))


# -- issue 28: what a demanding user found ------------------------------------------------


@pytest.fixture(scope="module")
def crowded_site(crowded):
    store = Store(crowded, read_only=True)
    yield Site(store)
    store.close()


def test_compare_links_survive_many_newer_runs_of_other_envs(crowded_site):
    """Defect 4: the cap of 12 links was taken before keeping runs of a shared env."""
    from viewdata import CROWD

    assert len(crowded_site.runs()) > 12 + 2
    assert all(r.id in {x.id for x in crowded_site.runs()[:13]} for r in [])  # order: newest
    body = text_of(crowded_site.page(run_page(viewdata.RUN_B)))
    assert f'href="{compare_page(viewdata.RUN_A, viewdata.RUN_B)}"' in body
    assert not any(run_id in body for run_id in CROWD)  # another env: never linked


def test_compare_drills_down_to_both_episodes_of_each_task_with_flags(crowded_site):
    """Defect 8: each shared task links to its episodes in A and in B, flags shown."""
    body = text_of(crowded_site.page(compare_page(viewdata.RUN_A, viewdata.RUN_B)))
    rows = {
        re.search(r"<td>(gcd-of-list|is-prime|count-vowels|caesar-shift)</td>", r).group(1): r
        for r in re.findall(r"<tr class=\"\w+\">.*?</tr>", body, re.S)
        if "<td>" in r
    }
    gcd = rows["gcd-of-list"]
    for eid in ("a0gcdxof0", "a0gcdxof1", "b0gcdxof0", "b0gcdxof1"):
        assert f'href="{episode_page(eid)}"' in gcd, eid
    assert '<span class="flag">tests_touched</span>' in gcd  # B's failures touched tests
    assert "tests_touched" not in rows["is-prime"].split('class="drill a"')[1].split("</td>")[0]
    flags = re.search(r'<table class="flags-compare">.*?</table>', body, re.S).group(0)
    assert re.search(
        r"tests_touched</span></td><td class=\"n\">3</td><td class=\"n\">3</td>", flags
    )


def test_compare_of_one_shared_task_says_it_has_no_interval(crowded_site):
    """Defect 8: one task gave a degenerate '1.00 [1.00, 1.00]'."""
    from viewdata import ONE_A, ONE_B

    body = html.unescape(text_of(crowded_site.page(compare_page(ONE_A, ONE_B))))
    assert "1.00 (n=1, no interval)" in body
    assert "[1.00, 1.00]" not in body


def test_an_interval_is_shown_or_its_absence_explained():
    from gym._reports._report import Metric
    from gym._view._site import interval

    assert interval(Metric(value=0.5, lo=0.2, hi=0.8)) == "0.50 [0.20, 0.80]"
    assert interval(Metric(value=1.0, lo=1.0, hi=1.0), 1) == "1.00 (n=1, no interval)"
    assert interval(Metric(value=1.0, lo=1.0, hi=1.0), 4) == "1.00 (all 4 tasks equal, no interval)"
    exact = Metric(value=1.0, lo=0.4, hi=1.0, interval="clopper-pearson")
    assert interval(exact, 1) == "1.00 [0.40, 1.00]"
    assert interval(Metric(value=float("nan"), lo=0, hi=0)) == "-"
    assert interval(Metric(value=0.95, lo=0.95, hi=0.95), 1, short=True) == "0.95 (n=1)"


def test_bidi_and_control_characters_never_reach_any_page(crowded_site, crowded):
    """Defect 10: bidi overrides and controls from labels, task ids and messages reached
    the raw text pages; every page, HTML and text, shows them as escapes."""
    from viewdata import HOSTILE_RUN

    store = Store(crowded, read_only=True)
    (episode,) = store.episodes(HOSTILE_RUN)
    names = [
        "index.html",
        run_page(HOSTILE_RUN),
        episode_page(episode.id),
        raw_page(episode.id, "step-0-text"),
        raw_page(episode.id, "step-0-call"),
        f"api/run/{HOSTILE_RUN}/status.json",
    ]
    for name in names:
        body = crowded_site.page(name).body.decode("utf-8")
        bad = [c for c in ("\u202e", "\u2066", "\u200f", "\x07", "\x1b") if c in body]
        assert not bad, (name, bad)
    raw = crowded_site.page(raw_page(episode.id, "step-0-text")).body.decode("utf-8")
    assert raw == "said \\u202eevil\\u2066 \\u200fmark\\x07bell link"
    run = html.unescape(text_of(crowded_site.page(run_page(HOSTILE_RUN))))
    assert "label \\u202eevil" in run and "is-prime\\u202eevil" in run


def test_the_raw_arguments_of_an_invalid_call_are_shown_escaped(crowded_site, crowded):
    """Defect 10: the episode page showed no arguments for a call that was not valid."""
    from viewdata import HOSTILE_RUN

    (episode,) = Store(crowded, read_only=True).episodes(HOSTILE_RUN)
    body = text_of(crowded_site.page(episode_page(episode.id)))
    assert "no valid tool call: unknown tool &#39;bsh&#39;" in body
    assert f"bsh {viewdata.BAD_ARGUMENTS}" in "".join(parse(body).text)  # whole, as text
    assert "&lt;oops&gt;" in body and "&amp;lt;" not in body  # escaped exactly once
    raw = crowded_site.page(raw_page(episode.id, "step-0-call")).body.decode("utf-8")
    assert raw == f"bsh {viewdata.BAD_ARGUMENTS}"


def test_the_task_filter_ignores_case(stored):
    """Defect 10: ``--task GCD`` found nothing (view.js follows the same rule)."""
    items = episode_items(Store(stored, read_only=True), viewdata.RUN_B)
    assert [i.task_id for i in select(items, task="GCD")] == ["gcd-of-list"] * 2
    assert len(select(items, task="Prime ")) == 2
    script = (Path(__file__).parents[2] / "gym/_view/static/view.js").read_text()
    assert "d.task.toLowerCase().includes(f.task.toLowerCase())" in script


def test_an_unknown_flag_filter_names_the_flags_there_are(stored):
    """Defect 10: ``--flag nope`` silently listed nothing."""
    from gym import ConfigError

    items = episode_items(Store(stored, read_only=True), viewdata.RUN_B)
    with pytest.raises(ConfigError) as caught:
        select(items, flag="nope")
    assert str(caught.value) == (
        "no flag named 'nope' in this run; flags here: tests_touched (or any, none)"
    )
    with pytest.raises(ConfigError, match="flags here: none"):
        select([i for i in items if not i.flags], flag="tests_touched")


def test_run_pages_show_a_status_badge_and_the_share_of_planned_episodes(crowded_site):
    body = text_of(crowded_site.page("index.html"))
    assert '<span class="badge status finished"' in body and ">finished 8/8<" in body
    run = text_of(crowded_site.page(run_page(viewdata.RUN_B)))
    assert "8 of 8 planned; finished at" in run
    assert 'data-status-url="api/run/b0candidate00002/status.json"' in run


def test_every_table_of_runs_and_episodes_is_sortable(crowded_site):
    pages = ["index.html", run_page(viewdata.RUN_B), compare_page(viewdata.RUN_A, viewdata.RUN_B)]
    for name in pages:
        tables = parse(text_of(crowded_site.page(name))).tags
        sortable = [a for t, a in tables if t == "table" and "sortable" in (a.get("class") or "")]
        assert sortable, name
    run = text_of(crowded_site.page(run_page(viewdata.RUN_B)))
    assert '<table class="episodes sortable" id="episodes" data-sort-param="sort">' in run
    assert '<th data-key="reward" class="n">reward</th>' in run


def test_the_training_page_shows_each_step_with_intervals(crowded_site):
    from viewdata import TRAIN

    from gym._reports._plot import wilson
    from gym._view._links import train_page

    index = text_of(crowded_site.page("index.html"))
    assert f'href="{train_page(TRAIN)}"' in index
    body = html.unescape(text_of(crowded_site.page(train_page(TRAIN))))
    lo, hi = wilson(0.5, 8)  # step 1: hidden pass 0.5 of 9 episodes, 1 an infra error
    assert f"0.50 [{lo:.2f}, {hi:.2f}]" in body and 0.2 < lo < hi < 0.8
    lo, hi = wilson(0.6, 8)  # step 2: mean reward
    assert f"0.60 [{lo:.2f}, {hi:.2f}]" in body
    lo, hi = wilson(0.25, 8)  # step 0: tests_touched on 0.25 of the episodes
    assert f"0.25 [{lo:.2f}, {hi:.2f}]" in body
    assert "9 (1)" in body  # episodes (infra errors)
    plot = crowded_site.page(f"plot/train-{TRAIN}.png")
    assert plot.type == "image/png" and plot.body.startswith(b"\x89PNG")


def test_the_static_copy_says_it_does_not_update_and_has_no_search(crowded_site, tmp_path):
    from viewdata import TRAIN

    write_site(crowded_site, tmp_path)
    run = (tmp_path / run_page(viewdata.RUN_B)).read_text()
    assert "a static copy: no live update" in run and "data-status-url" not in run
    assert "data-search-url" not in run and 'action="search.html"' not in run
    assert (tmp_path / f"train-{TRAIN}.html").exists()
    assert (tmp_path / "static" / "favicon.svg").exists()
    assert crowded_site.live  # the served site is untouched
