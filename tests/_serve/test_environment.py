"""The protocol mapping: one session's `BoxgymEnvironment` over the toy family (no Docker)."""

from __future__ import annotations

import pytest
import toy_env
from pydantic import ValidationError

from gym._core._errors import ConfigError
from gym._serve._client import ServeClient
from gym._serve._environment import BoxgymEnvironment
from gym._serve._models import Call, EpisodeState, ToolAction, ToolObservation


@pytest.fixture
def session():
    env = BoxgymEnvironment(toy_env.ENV_ID)
    yield env
    env.close()


def write(content: str, path: str = "answer.txt") -> ToolAction:
    return ToolAction(tool="write_file", arguments={"path": path, "content": content})


def test_reset_gives_the_prompt_tools_and_system_prompt(session):
    obs = session.reset(seed=3, task_id="add", episode_id="ep-1")
    assert "sum of 2 and 3" in obs.text
    assert obs.task_id == "add" and obs.env_id == toy_env.ENV_ID
    assert {t["function"]["name"] for t in obs.tools} >= {"bash", "write_file", "submit"}
    assert obs.system_prompt
    assert (obs.done, obs.reward, obs.outcome, obs.verdict) == (False, None, None, None)
    state = session.state
    assert (state.episode_id, state.task_id, state.split, state.step_count) == (
        "ep-1",
        "add",
        "train",
        0,
    )
    assert state.done is False and state.sandbox is not None


def test_a_step_runs_the_tool_and_the_final_one_carries_the_verdict(session):
    session.reset(task_id="add")
    step = session.step(ToolAction(tool="bash", arguments={"command": "echo out-$((2+3))"}))
    assert "out-5" in step.text
    assert (step.done, step.reward, step.outcome) == (False, 0.0, None)
    session.step(write("5"))
    end = session.step(ToolAction(tool="submit", content="Done: the answer is written."))
    assert end.done and end.outcome == "pass" and end.reward == 1.0 and end.verified
    assert end.verdict is not None and end.verdict["outcome"] == "pass"
    assert end.verdict["components"]["answer"]["passed"] is True
    assert end.end_reason == "submit"
    state = session.state
    assert (state.done, state.outcome, state.step_count, state.sandbox) == (True, "pass", 3, None)


def test_a_wrong_answer_fails(session):
    session.reset(task_id="add")
    session.step(write("4"))
    end = session.step(ToolAction(name="submit"))  # OpenAI's `name` is read as the tool
    assert end.done and end.outcome == "fail" and end.reward == 0.0 and not end.verified


def test_the_verdict_flags_are_named_and_a_flagged_pass_is_not_verified(session):
    session.reset(task_id="add")
    session.step(write("5"))
    session.step(write("x", path="elsewhere.txt"))
    end = session.step(ToolAction(tool="submit"))
    assert end.verdict is not None
    assert end.flags == [f["name"] for f in end.verdict["flags"]] == ["scratch_file"]
    assert not end.verified


def test_several_calls_run_in_order_and_stop_at_the_end_of_the_episode(session):
    session.reset(task_id="add")
    calls = [
        Call(tool="write_file", arguments='{"path": "answer.txt", "content": "5"}'),
        Call(name="submit"),
        Call(tool="bash", arguments={"command": "echo never"}),
    ]
    end = session.step(ToolAction(calls=calls))
    assert len(end.outputs) == 3 and "Not run: the episode ended" in end.outputs[2]
    assert end.done and end.outcome == "pass" and end.reward == 1.0
    assert session.state.step_count == 1  # one protocol step, three calls


def test_plain_text_without_a_tool_is_answered_as_an_invalid_call(session):
    session.reset(task_id="add")
    obs = session.step(ToolAction(content="I think the answer is 5."))
    assert obs.text.startswith("Error:") and not obs.done


def test_an_infrastructure_failure_ends_with_no_reward(session, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("grader exploded")

    monkeypatch.setattr(toy_env.ToyEnv, "grade", broken)
    session.reset(task_id="add")
    end = session.step(ToolAction(tool="submit"))
    assert end.done and end.outcome == "infra_error"
    assert end.reward is None  # never 0 or 1
    assert end.verdict is not None and end.verdict["reward"] is None
    assert "grader exploded" in end.verdict["reason"]
    assert session.state.outcome == "infra_error"


def test_wrong_use_says_what_to_do(session):
    with pytest.raises(ConfigError, match="reset first"):
        session.step(ToolAction(tool="submit"))
    with pytest.raises(ConfigError, match="reset takes .*not task$"):
        session.reset(task="add")
    with pytest.raises(ConfigError, match="no task 'nope'"):
        session.reset(task_id="nope")
    with pytest.raises(ValidationError, match="either `tool`"):
        ToolAction(tool="bash", calls=[Call(tool="submit")])


def test_a_closed_session_gives_its_sandbox_back_and_refuses_more(session):
    session.reset(task_id="add")
    session.step(ToolAction(tool="bash", arguments={"command": "true"}))
    assert session.state.sandbox not in (None, "lazy")
    session.close()
    assert session.state.sandbox is None
    with pytest.raises(ConfigError, match="session is closed"):
        session.reset(task_id="add")
    session.close()  # twice is fine


def test_the_typed_client_reads_what_the_server_sends(session):
    client = ServeClient(base_url="http://127.0.0.1:1")
    session.reset(task_id="add")
    sent = client._step_payload(ToolAction(tool="submit", content="done"))
    assert sent == {"tool": "submit", "content": "done"}
    obs = session.step(ToolAction.model_validate(sent))
    wire = {
        "observation": obs.model_dump(exclude={"reward", "done", "metadata"}),
        "reward": obs.reward,
        "done": obs.done,
    }
    result = client._parse_result(wire)
    assert isinstance(result.observation, ToolObservation)
    assert result.done and result.observation.outcome == "fail" and result.reward == 0.0
    state = client._parse_state(session.state.model_dump())
    assert isinstance(state, EpisodeState) and state.task_id == "add"


def test_metadata_names_the_environment_and_its_family(session):
    meta = session.get_metadata()
    assert meta.name == toy_env.ENV_ID and "family toy" in meta.description
