"""User turns, parallel calls and offered tools on the episode page and in the terminal."""

from __future__ import annotations

import html
from html.parser import HTMLParser

import pytest
import turns_episode as two
from sqlmodel import col, delete

from gym._store import Store, TurnsRow
from gym._view import Site, episode_text, write_site
from gym._view._episode import episode_view
from gym._view._links import episode_page, raw_page


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture
def store(tmp_path):
    writer = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    two.store_it(writer)
    writer.close()
    reader = Store(writer.url, read_only=True)
    yield reader
    reader.close()


def _body(store: Store, eid: str = "e0turns") -> str:
    return Site(store).page(episode_page(eid)).body.decode("utf-8")


def test_a_separator_opens_the_second_user_turn_with_its_message_escaped_once(store):
    body = _body(store)
    page = _Page()
    page.feed(body)
    assert [a for t, a in page.tags if t == "script"] == [{"src": "static/view.js", "defer": None}]
    assert "<b>now cancel it</b>" not in body and "<i>today</i>" not in body  # no markup
    assert "&lt;script&gt;alert(&#39;turn&#39;)&lt;/script&gt;&lt;b&gt;now cancel it" in body
    assert "&amp;lt;" not in body and "\x1b" not in body
    assert "<script>alert('turn')</script><b>now cancel it</b> red" in "".join(page.text)
    ids = [a.get("id") for _, a in page.tags if a.get("id")]
    assert ids.index("step-2") < ids.index("turn-1") < ids.index("step-3")
    assert "turn-0" not in ids and "over 2 user turns" in body
    assert html.unescape(body).count("ends user turn") == 2


def test_parallel_calls_are_steps_of_one_message_shown_once(store):
    page = episode_view(store, "e0turns")
    assert [(t.index, t.turn, t.call, t.calls) for t in page.turns] == [
        (0, 0, 0, 2),
        (1, 0, 1, 2),
        (2, 0, 0, 1),
        (3, 1, 0, 1),
        (4, 1, 0, 1),
    ]
    assert [t.text.text for t in page.turns] == [
        "Searching both.",
        "",
        "Two found.",
        "Cancelling.",
        "Done.",
    ]
    assert [t.observation.text for t in page.turns if t.observation] == [
        "AZ 401",
        "AF 1275",
        "turn submitted",
        "cancelled 7",
        "submitted",
    ]
    assert [t.turn_end for t in page.turns] == [False, False, True, False, True]
    assert "call 2 of 2 of the message above" in _body(store)


def test_the_tools_the_episode_offered_are_listed_with_their_schemas(store):
    page = episode_view(store, "e0turns")
    assert [(t.name, t.kind) for t in page.tools] == [
        ("find_flights", "read"),
        ("cancel", ""),
        ("submit", ""),
    ]
    body = html.unescape(_body(store))
    assert "tools offered (3)" in body and '"required": [\n' in body
    assert "Flights between two cities <i>today</i>." in body  # shown as text (see above)
    transcript = Site(store).page(raw_page("e0turns", "user-transcript")).body.decode()
    assert '"turn": 1' in transcript


def test_raw_pages_give_the_whole_user_message_and_tools(store):
    site = Site(store)
    said = site.page(raw_page("e0turns", "turn-1-user"))
    assert said.type.startswith("text/plain")
    assert said.body.decode() == "<script>alert('turn')</script><b>now cancel it</b> red"
    assert b'"find_flights"' in site.page(raw_page("e0turns", "tools")).body
    assert site.page(raw_page("e0turns", "step-1-text")).body == b"Searching both."


def test_the_terminal_view_separates_the_user_turns(store):
    text = episode_text(store, store.episode("e0turns"))
    assert "tools: find_flights, cancel, submit" in text
    before, _, after = text.partition("=== user turn 1 ===")
    assert "--- step 2: submit" in before and "--- step 3: cancel" in after
    assert "<b>now cancel it</b> red" in after and "\x1b" not in text
    assert text.count("assistant: Searching both.") == 1


def test_an_episode_stored_before_turns_still_renders_as_one_turn(tmp_path):
    writer = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    eid = two.store_it(writer)
    with writer.session() as s:  # as an older boxgym wrote it: no turns
        s.exec(delete(TurnsRow).where(col(TurnsRow.episode_id) == eid))
        s.commit()
    writer.close()
    store = Store(writer.url, read_only=True)
    page = episode_view(store, "e0turns")
    assert page.tools == [] and page.user_turns == 1 and page.user_transcript is None
    assert [t.opens for t in page.turns] == [None] * 5 and not any(t.turn_end for t in page.turns)
    assert [t.text.text for t in page.turns][:2] == ["Searching both.", ""]  # placed by shape
    body = _body(store)
    assert 'id="turn-1"' not in body and "tools offered" not in body
    assert "=== user turn" not in episode_text(store, store.episode("e0turns"))
    assert write_site(Site(store), tmp_path / "site") > 0
    store.close()


def test_an_episode_of_one_user_turn_shows_no_turn_end(tmp_path):
    """Every single-turn episode's submit said "ends user turn 0": noise (a review helper)."""
    from gym._run._executor import Job
    from gym._run._runner import RunConfig, _rows

    whole = two.result()
    one = whole.model_copy(
        update={
            "messages": two.MESSAGES[:7],
            "turns": whole.turns[:2],
            "steps": [*whole.steps[:2], whole.steps[2].model_copy(update={"user": None})],
            "step_turns": two.STEP_ASSISTANT[:3],
            "user_transcript": whole.user_transcript[:1],
        }
    )
    task = two.Task(id="book/1", family="toy", prompt="Find flights.", split="train")
    job = Job(env_id=two.ENV, task=task, sample_index=0, seed=0, episode_id="e1turn")
    episode, steps, verdict, turns = _rows(
        RunConfig(envs=[two.ENV], policy="openai"), job, one, 1, "0"
    )
    writer = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    writer.ensure_run(
        two.RunRow(
            id=episode.run_id,
            created_at=0.0,
            updated_at=0.0,
            config={},
            policy="openai",
            boxgym_version="0",
        )
    )
    writer.commit_episode(episode, steps, verdict, turns)
    assert turns.turn_ends()  # the submit ends turn 0 in the record
    body = html.unescape(_body(writer, "e1turn"))
    assert "submit" in body and "ends user turn" not in body
