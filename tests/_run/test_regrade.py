"""Regrading stored runs: the same grading as at the episode's end, claim flags included."""

from __future__ import annotations

import pytest
import toy_env
from toy_env import ENV_ID

from gym import OraclePolicy, ScriptPolicy, ToolCall
from gym._run._regrade import regrade_run, trajectory_of
from gym._run._runner import RunConfig, run
from gym._store import StepRow, Store


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    yield s
    s.close()


class ClaimingPolicy(ScriptPolicy):
    """Writes a wrong answer and a stray file, then says it fixed everything."""

    name = "claiming"

    def __init__(self) -> None:
        super().__init__(
            [
                ToolCall(name="write_file", arguments={"path": "answer.txt", "content": "6"}),
                ToolCall(name="bash", arguments={"command": "echo x > stray.txt"}),
            ]
        )

    def act(self, messages, tools):
        turn = super().act(messages, tools)
        turn.message["content"] = "I fixed the bug and all tests pass now."
        return turn


def test_a_stored_run_regrades_to_the_verdicts_it_stored(store):
    config = RunConfig(envs=[ENV_ID], policy="claiming", k=2)
    run(config, store=store, policy_factory=ClaimingPolicy)
    stored = store.verdicts(config.run_id)
    assert {f["name"] for v in stored.values() for f in v.flags} == {
        "claimed_success",
        "scratch_file",
    }
    changes = regrade_run(store, config.run_id)
    assert len(changes) == 4 and not [c for c in changes if c["changed"]]
    again = store.verdicts(config.run_id)
    assert {k: (v.outcome, v.flags) for k, v in again.items()} == {
        k: (v.outcome, v.flags) for k, v in stored.items()
    }


def test_a_changed_grade_is_recorded_as_a_new_current_verdict(store, monkeypatch):
    config = RunConfig(envs=[ENV_ID], policy="oracle", limit=1)
    run(config, store=store, policy_factory=OraclePolicy)
    real = toy_env.ToyEnv.load_tasks

    def stricter(cls):
        tasks = real()
        return [t.model_copy(update={"data": {**t.data, "expected": "6"}}) for t in tasks]

    monkeypatch.setattr(toy_env.ToyEnv, "load_tasks", classmethod(stricter))
    (change,) = regrade_run(store, config.run_id)
    assert change["changed"] and (change["before"], change["after"]) == ("pass", "fail")
    assert store.episode(change["episode_id"]).outcome == "fail"


def test_a_stored_trajectory_gets_each_step_its_assistant_text():
    steps = [
        StepRow(episode_id="e", index=0, tool="bash", arguments={"command": "ls"}),
        StepRow(episode_id="e", index=1, tool="", observation="Error: not JSON"),
        StepRow(episode_id="e", index=2, tool="submit"),
    ]
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "content": "out"},
        {"role": "assistant", "content": "hmm"},
        {"role": "user", "content": "Error"},
        {"role": "assistant", "content": "All tests pass."},
    ]
    trajectory = trajectory_of(steps, messages)
    assert [s.content for s in trajectory] == [None, "hmm", "All tests pass."]
    assert [s.call.name if s.call else None for s in trajectory] == ["bash", None, "submit"]
