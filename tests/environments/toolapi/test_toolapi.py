"""boxgym/ToolAPI-v0: the service's plain projection, the turn-by-turn grader, episodes."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import gymnasium
import pytest

import gym
from environments.toolapi import ToolAPIState
from environments.toolapi._grading import Gold, missing_results, turn_components
from environments.toolapi._service import Checkpoint

ROOT = Path(__file__).resolve().parents[3]
ENV_ID = "boxgym/ToolAPI-v0"


def server() -> ModuleType:
    path = ROOT / "images" / "toolapi" / "toolapi" / "server.py"
    spec = importlib.util.spec_from_file_location("toolapi_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Directory:
    def __init__(self, name: str, parent: Directory | None = None) -> None:
        self.name, self.parent, self.contents = name, parent, {}
        self._hidden = "never compared"


def test_plain_projects_public_attributes_and_breaks_parent_links() -> None:
    plain = server().plain
    root = Directory("/")
    root.contents["docs"] = Directory("docs", root)
    out = plain(root)
    assert out["__class__"] == "Directory" and "_hidden" not in out
    assert out["contents"]["docs"]["parent"] == {"__cycle__": "Directory"}
    assert plain({1: "a", "1": "b"}) == {"__dict__": [["1", "b"], [1, "a"]]}
    assert plain({3, 1, 2}) == {"__set__": [1, 2, 3]}
    assert plain((1, [2.5, float("inf")])) == {"__tuple__": [1, [2.5, {"__float__": "inf"}]]}
    assert plain({"__set__": [1], "_x": 2}) == {"___set__": [1], "_x": 2}


class Folder(Directory):
    """BFCL's Directory: equal by name and contents, whatever its parent."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Folder) and (self.name, self.contents) == (
            other.name,
            other.contents,
        )

    __hash__ = None  # type: ignore[assignment]


def test_an_object_held_in_a_backend_is_projected_as_its_own_eq_compares_it() -> None:
    """BFCL compares a backend's attributes with ``==``: a folder moved away and back is
    the same tree, though its children's parent links point at the detached old folder
    (a correct episode failed on them; found by a red-team helper)."""
    plain = server().plain

    def tree() -> Folder:
        root = Folder("/")
        docs = root.contents["docs"] = Folder("docs", root)
        docs.contents["sub"] = Folder("sub", docs)
        return root

    gold, moved = tree(), tree()
    old = moved.contents["docs"]
    moved.contents["docs"] = Folder("docs", moved)  # as BFCL's mv: contents handed over
    moved.contents["docs"].contents = old.contents
    assert gold == moved and plain(gold) == plain(moved)
    assert "parent" not in plain(gold)["contents"]["docs"]
    renamed = tree()
    renamed.contents["docs"].contents["sub"].name = "other"
    assert plain(gold) != plain(renamed)  # what its __eq__ reads is still compared
    assert plain(tree())["name"] == "/"  # a backend instance itself: its public attributes


def test_results_are_written_as_bfcl_writes_them() -> None:
    as_text = server().as_text
    assert as_text({"a": 1}) == '{"a": 1}'
    assert as_text("plain") == "plain"
    assert as_text([1, 2]) == "[1, 2]"
    assert as_text({"x": object()}).startswith("{'x': <object")


def cp(state: dict, results: list[str]) -> Checkpoint:
    return Checkpoint(state={"NoteBook": state}, results=results)


GOLD = [
    cp({"notes": {"a": "1"}}, ['{"added": "a"}']),
    cp({"notes": {"a": "1"}}, ['{"titles": ["a"]}']),
]
CALLS = Gold.model_validate(
    {"turns": [[{"name": "add_note", "arguments": {}}], [{"name": "list_notes", "arguments": {}}]]}
)


def test_the_gold_itself_passes_every_turn() -> None:
    components = turn_components(ToolAPIState(turns=GOLD), GOLD, CALLS)
    assert list(components) == ["turn_1", "turn_2"]
    assert all(c.passed and c.gated for c in components.values())


def test_a_state_difference_names_the_class_and_attribute() -> None:
    agent = [cp({"notes": {"a": "2"}}, ['{"added": "a"}']), GOLD[1]]
    components = turn_components(ToolAPIState(turns=agent), GOLD, CALLS)
    assert not components["turn_1"].passed
    assert (
        '"NoteBook": {"notes": {"agent": {"a": "2"}, "gold": {"a": "1"}}}'
        in components["turn_1"].explanation
    )


def test_results_may_come_in_an_earlier_turn_but_must_all_be_there() -> None:
    early = [
        cp({"notes": {"a": "1"}}, ['{"added": "a"}', '{"titles": ["a"]}']),
        cp({"notes": {"a": "1"}}, ["x"]),
    ]
    assert all(c.passed for c in turn_components(ToolAPIState(turns=early), GOLD, CALLS).values())
    wrong = [GOLD[0], cp({"notes": {"a": "1"}}, ['{"titles": []}'])]
    second = turn_components(ToolAPIState(turns=wrong), GOLD, CALLS)["turn_2"]
    assert not second.passed and "gold results missing" in second.explanation
    assert missing_results(["a", "b"], ["a", "a"]) == ["a"]


def test_an_empty_turn_and_a_turn_never_reached_fail() -> None:
    idle = [cp({"notes": {"a": "1"}}, []), GOLD[1]]
    assert (
        "no tool call"
        in turn_components(ToolAPIState(turns=idle), GOLD, CALLS)["turn_1"].explanation
    )
    short = ToolAPIState(turns=GOLD[:1], error="the backend stopped answering")
    second = turn_components(short, GOLD, CALLS)["turn_2"]
    assert not second.passed and "ended before this user turn" in second.explanation
    assert "stopped answering" in second.explanation


def test_a_turn_without_gold_calls_is_checked_only_by_the_state_after_it() -> None:
    """The next turn's state holds what such a turn changed; nothing holds the last one's."""
    calls = Gold.model_validate({"turns": [[], [{"name": "list_notes", "arguments": {}}]]})
    agent = [cp({"notes": {}}, []), GOLD[1]]
    assert turn_components(ToolAPIState(turns=agent), GOLD, calls)["turn_1"].passed
    calls = Gold.model_validate({"turns": [[{"name": "add_note", "arguments": {}}], []]})
    emptied = turn_components(ToolAPIState(turns=[GOLD[0], cp({"notes": {}}, [])]), GOLD, calls)
    assert not emptied["turn_2"].passed
    kept = turn_components(
        ToolAPIState(turns=[GOLD[0], cp({"notes": {"a": "1"}}, [])]), GOLD, calls
    )
    assert kept["turn_2"].passed


# -- in real containers ----------------------------------------------------------------


def play(env: gymnasium.Env, task: str, calls: list[tuple[str, dict]]) -> dict:
    obs, info = env.reset(options={"task": task})
    assert info["turn"] == 0 and "submit" in [t["function"]["name"] for t in info["tools"]]
    for name, arguments in calls:
        obs, reward, terminated, truncated, info = env.step({"name": name, "arguments": arguments})
        if terminated or truncated:
            return info
    raise AssertionError("the episode did not end")


@pytest.mark.docker
def test_an_agent_that_writes_the_wrong_text_fails_the_turn_it_did_it_in(engine: None) -> None:
    env = gym.make(ENV_ID)
    try:
        info = play(
            env,
            "notebook/add-then-list",
            [
                ("add_note", {"title": "groceries", "text": "bread"}),
                ("submit", {}),
                ("list_notes", {}),
                ("submit", {}),
            ],
        )
    finally:
        env.close()
    verdict = info["verdict"]
    assert verdict["outcome"] == "fail"
    assert not verdict["components"]["turn_1"]["passed"]
    assert '"text": "bread"' not in verdict["components"]["turn_1"]["explanation"]
    assert "milk, eggs" in verdict["components"]["turn_1"]["explanation"]
    state = info["final_state"]
    assert len(state["turns"]) == 2
    assert state["turns"][0]["state"]["NoteBook"]["notes"]["groceries"] == "bread"
    assert state["turns"][1]["results"] == ['{"titles": ["groceries", "ideas"]}']


@pytest.mark.docker
def test_a_backend_error_is_the_agents_observation_not_an_infra_error(engine: None) -> None:
    env = gym.make(ENV_ID)
    try:
        env.reset(options={"task": "notebook/read-only"})
        obs, *_ = env.step({"name": "read_note", "arguments": {"title": "nope"}})
        assert obs == '{"error": "no note titled \'nope\'"}'
        obs, _, _, _, info = env.step({"name": "read_note", "arguments": {"title": 3}})
        assert "error" in info  # a wrong JSON type is refused before the backend
        *_, info = env.step({"name": "submit", "arguments": {}})
    finally:
        env.close()
    assert info["verdict"]["outcome"] == "fail"


def test_a_checkpoint_reply_that_does_not_validate_is_the_turns_unread_state(monkeypatch) -> None:
    """Like a reply that is not ok: the turn's state is unread (its turn fails), never a
    validation error out of the episode (which the runner would record as ``infra_error``)."""
    import environments.toolapi as toolapi

    env = gym.make(ENV_ID).unwrapped
    monkeypatch.setattr(toolapi, "exchange", lambda *a, **k: {"ok": True, "state": 3})
    assert env._checkpoint(sandbox=None) is None
    assert "did not read as a checkpoint" in env._service_error
