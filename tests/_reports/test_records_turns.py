"""Training records carry the tools an episode offered and its user-turn boundaries."""

from __future__ import annotations

import json

import pytest
import turns_episode as two
from forget import forget

import gym
from gym import OraclePolicy
from gym._reports._records import write_records
from gym._run._runner import RunConfig, run
from gym._store import EpisodeRow, StepRow, Store


def _records(store: Store, run_id: str, out) -> list[dict]:
    write_records(store, run_id, out)
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_a_record_of_two_user_turns_carries_tools_and_turn_boundaries(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    eid = two.store_it(store)
    (record,) = _records(
        Store(store.url, read_only=True), store.episode(eid).run_id, tmp_path / "r.jsonl"
    )
    assert record["tools"] == two.TOOLS  # OpenAI function schemas, as reset offered them
    assert record["messages"] == two.MESSAGES
    assert record["message_turns"] == two.MESSAGE_TURNS
    assert record["messages"][7] == {"role": "user", "content": two.USER}
    assert record["user_turns"] == [
        {"turn": 0, "messages": [0, 7], "steps": [0, 3], "end_step": 2},
        {"turn": 1, "messages": [7, 13], "steps": [3, 5], "end_step": 4},
    ]
    assert [(c["name"], c["turn"]) for c in record["tool_calls"]] == [
        ("find_flights", 0),
        ("find_flights", 0),
        ("submit", 0),
        ("cancel", 1),
        ("submit", 1),
    ]
    # four assistant messages made five steps: each message's tokens are trained on once
    assert [t["completion_token_ids"] for t in record["turns"]] == [
        [10, 11],
        [11, 11],
        [12, 11],
        [13, 11],
    ]
    store.close()


def test_an_episode_stored_without_turns_exports_one_turn_and_no_tools(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    two.store_it(store)
    episode, steps, verdict, _ = two.rows()
    old = EpisodeRow(**{**episode.model_dump(), "id": "e1old", "sample_index": 1})
    copied = [StepRow(**{**s.model_dump(), "episode_id": "e1old"}) for s in steps]
    store.commit_episode(old, copied, None)
    records = {r["episode_id"]: r for r in _records(store, episode.run_id, tmp_path / "r.jsonl")}
    record = records["e1old"]
    assert record["tools"] == [] and record["message_turns"] == [0] * len(two.MESSAGES)
    assert record["user_turns"] == [
        {"turn": 0, "messages": [0, 13], "steps": [0, 5], "end_step": None}
    ]
    assert {c["turn"] for c in record["tool_calls"]} == {0}
    assert records[episode.id]["message_turns"] == two.MESSAGE_TURNS  # its neighbour's kept
    store.close()


def test_the_hf_dataset_card_names_the_tools_and_turn_fields(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    eid = two.store_it(store)
    write_records(store, store.episode(eid).run_id, tmp_path / "hf", fmt="hf")
    card = (tmp_path / "hf" / "README.md").read_text()
    assert all(f"`{name}`" in card for name in ("tools", "message_turns", "user_turns"))
    (line,) = (tmp_path / "hf" / "data.jsonl").read_text().splitlines()
    assert json.loads(line)["tools"] == two.TOOLS
    store.close()


DESK = "desk/Turns-v0"


@pytest.fixture
def desk():
    """The desk family (tests/desk_env.py: schema tools, scripted turns), registered here."""
    gym.register(DESK, "desk_env:DeskEnv", max_steps=12, max_seconds=120)
    yield DESK
    forget([DESK])


def test_a_run_of_a_three_turn_task_exports_its_tools_and_turns(desk, tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    config = RunConfig(envs=[desk], policy="oracle", tasks=["three"])
    state = run(config, store=store, policy_factory=OraclePolicy)
    assert state.passed == 1
    (record,) = _records(store, config.run_id, tmp_path / "r.jsonl")
    assert [t["function"]["name"] for t in record["tools"]] == ["submit", "put", "get"]
    users = [m["content"] for m in record["messages"] if m["role"] == "user"]
    assert users == ["Store a=1.", "Now store b=2.", "Now store c=3."]
    opened = [
        record["message_turns"][i] for i, m in enumerate(record["messages"]) if m["role"] == "user"
    ]
    assert opened == [0, 1, 2]  # each user message opens its turn
    spans = record["user_turns"]
    assert [s["turn"] for s in spans] == [0, 1, 2]
    starts = [record["messages"][s["messages"][0]]["content"] for s in spans[1:]]
    assert starts == ["Now store b=2.", "Now store c=3."]  # a turn's span opens on its message
    assert [s["messages"][1] for s in spans[:-1]] == [s["messages"][0] for s in spans[1:]]
    assert all(record["tool_calls"][s["end_step"]]["name"] == "submit" for s in spans)
    assert [c["turn"] for c in record["tool_calls"] if c["name"] == "submit"] == [0, 1, 2]
    store.close()
