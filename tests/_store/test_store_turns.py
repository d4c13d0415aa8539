"""An episode's tools and user turns in the run store (SQLite and a real PostgreSQL)."""

from __future__ import annotations

import turns_episode as two
from sqlmodel import SQLModel, create_engine, select

from gym._store import (
    EpisodeRow,
    Store,
    TurnEnd,
    TurnsRow,
    message_turns,
    said_by_step,
    step_said,
    user_turns,
)


def test_an_episode_of_two_turns_reads_back_with_its_tools_and_turn_ends(url):
    writer = Store(url)
    eid = two.store_it(writer)
    reader = Store(url, read_only=True)  # as the viewer and `gym export` open it
    kept = reader.turns(eid)
    assert kept.tools == two.TOOLS
    assert kept.step_turns == [0, 0, 0, 1, 1]
    assert kept.step_assistant == two.STEP_ASSISTANT
    assert kept.turn_ends() == [
        TurnEnd(step=2, turn=0, user=two.USER),
        TurnEnd(step=4, turn=1, user=None),
    ]
    assert [t["turn"] for t in kept.user_transcript] == [0, 1]
    assert reader.run_turns(reader.episode(eid).run_id) == {eid: kept}
    assert [s.tool for s in reader.steps(eid)] == ["find_flights"] * 2 + [
        "submit",
        "cancel",
        "submit",
    ]
    reader.close()
    writer.close()


def test_recommitting_an_episode_replaces_its_turns(url):
    store = Store(url)
    eid = two.store_it(store)
    with store.session() as s:  # it ended in infra_error: only such an episode is rerun
        stored = s.get(EpisodeRow, eid)
        assert stored is not None
        stored.outcome = "infra_error"
        s.add(stored)
        s.commit()
    episode, steps, verdict, _ = two.rows()
    assert store.commit_episode(episode, steps, verdict)  # a retry that recorded no turns
    assert store.turns(eid) == TurnsRow.empty(eid)
    with store.session() as s:
        assert list(s.exec(select(TurnsRow))) == []
    store.close()


def test_a_store_written_before_turns_reads_as_one_turn_then_gains_the_table(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    old = [t for t in SQLModel.metadata.sorted_tables if t.name != "episode_turns"]
    SQLModel.metadata.create_all(engine, tables=old)
    engine.dispose()
    reader = Store(url, read_only=True)  # no table may be created
    assert reader.turns("e0turns") == TurnsRow.empty("e0turns")
    assert reader.run_turns("any") == {}
    writer = Store(url)
    eid = two.store_it(writer)
    assert reader.turns(eid).step_turns == [0, 0, 0, 1, 1]  # the reader sees it now
    reader.close()
    writer.close()


def test_each_message_and_step_is_placed_in_its_user_turn():
    kept = two.rows()[3]
    assert said_by_step(two.MESSAGES, kept) == two.STEP_ASSISTANT
    assert message_turns(two.MESSAGES, kept) == two.MESSAGE_TURNS
    spans = [(t.turn, t.messages, t.steps, t.end_step) for t in user_turns(two.MESSAGES, kept, 5)]
    assert spans == [(0, (0, 7), (0, 3), 2), (1, (7, 13), (3, 5), 4)]


def test_an_episode_stored_without_turns_is_one_turn_placed_by_its_messages():
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "no call"},
        {"role": "user", "content": "call a tool"},  # a step without a valid call
        {"role": "assistant", "tool_calls": [{"id": "a"}, {"id": "b"}]},
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "content": "2"},
    ]
    empty = TurnsRow.empty("x")
    assert step_said(messages) == said_by_step(messages, empty) == [0, 1, 1]
    assert message_turns(messages, empty) == [0] * 7
    (only,) = user_turns(messages, empty, 3)
    assert (only.messages, only.steps, only.end_step) == ((0, 7), (0, 3), None)
