"""The viewer's pages rendered from a real store: what they show, escaped exactly once."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import viewdata

from gym._report import build_report, compare
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
    from gym._runner import RunConfig, run

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
