"""`gym export --format trl|verl`: each record in the shape that trainer reads.

The episode is the two-user-turn booking episode of tests/turns_episode.py, stored with
the token ids a server returned: each turn's prompt is the previous prompt, the sampled
ids and the tool result's tokens (the prefix property), so the exported completion is
the joined stream and its mask marks the sampled ids alone.
"""

from __future__ import annotations

import json

import turns_episode as two
from typer.testing import CliRunner

from gym._cli import app
from gym._store import RunRow, Store

PROMPT = [1, 2, 3]


def _completion(k: int) -> list[int]:
    return [10 + k, 11]


def _env(k: int) -> list[int]:
    return [50 + k, 60 + k]


def _store(tmp_path, *, broken_at: int | None = None) -> tuple[str, str]:
    """Store the episode with token-in/token-out ids; (store url, run id)."""
    episode, steps, verdict, turns = two.rows()
    episode.policy_params = {"policy_version": 3, "model": "boxgym-abc-v3"}
    prompt, k = list(PROMPT), 0
    for step in steps:
        if step.completion_token_ids is None:
            continue
        if k == broken_at:
            prompt = [9, *prompt]  # a template that rewrote an earlier turn
        step.prompt_token_ids = list(prompt)
        step.completion_token_ids = _completion(k)
        step.logprobs = [-0.5 - k, -0.25]
        prompt += _completion(k) + _env(k)
        k += 1
    assert k == 4  # four assistant messages made the five steps
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = Store(url)
    store.start_run(RunRow(**_run(episode.run_id)), planned=1)
    store.commit_episode(episode, steps, verdict, turns)
    store.close()
    return url, episode.run_id


def _run(run_id: str) -> dict:
    return dict(
        id=run_id, created_at=0.0, updated_at=0.0, config={}, policy="openai", boxgym_version="0"
    )


def _export(tmp_path, url: str, run_id: str, fmt: str) -> list[dict]:
    out = tmp_path / f"{fmt}.jsonl"
    result = CliRunner().invoke(
        app, ["export", run_id, "--out", str(out), "--format", fmt, "--db", url]
    )
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_trl_rows_are_prompt_completion_with_tools_and_the_rollout_token_fields(tmp_path):
    url, run_id = _store(tmp_path)
    (row,) = _export(tmp_path, url, run_id, "trl")
    first = next(i for i, m in enumerate(two.MESSAGES) if m["role"] == "assistant")
    assert row["prompt"] == two.MESSAGES[:first] and row["completion"] == two.MESSAGES[first:]
    assert row["prompt"][-1]["role"] == "user" and row["completion"][0]["role"] == "assistant"
    assert row["tools"] == two.TOOLS
    assert row["prompt_ids"] == PROMPT
    joined = [t for k in range(4) for t in _completion(k) + (_env(k) if k < 3 else [])]
    assert row["completion_ids"] == joined
    assert row["env_mask"] == [1, 1, 0, 0] * 3 + [1, 1]
    assert row["logprobs"][:4] == [-0.5, -0.25, 0.0, 0.0] and row["logprobs"][-2:] == [-3.5, -0.25]
    assert row["turn_spans"] == [[0, 2], [4, 6], [8, 10], [12, 14]]
    for begin, end in row["turn_spans"]:
        assert set(row["env_mask"][begin:end]) == {1}
    assert [t["turn"] for t in row["user_turns"]] == [0, 1]
    assert row["reward"] == 1.0 and row["policy_version"] == 3
    assert (row["sample"], row["samples"]) == (0, 1)
    assert row["episode_id"] == "e0turns" and row["outcome"] == "pass"


def test_verl_rows_carry_its_dataset_columns_and_agent_loop_output(tmp_path):
    url, run_id = _store(tmp_path, broken_at=2)
    rows = _export(tmp_path, url, run_id, "verl")
    assert len(rows) == 2  # the prefix broke at turn 2: two sequences, as trained
    first, second = rows
    assert first["data_source"] == two.ENV and first["agent_name"] == "boxgym_agent"
    assert first["messages"] == two.MESSAGES and first["tools"] == two.TOOLS
    assert first["prompt"][-1]["role"] == "user"
    assert "reward_model" not in first  # no ground truth leaves boxgym
    assert first["prompt_ids"] == PROMPT
    assert first["response_ids"] == _completion(0) + _env(0) + _completion(1)
    assert first["response_mask"] == [1, 1, 0, 0, 1, 1]
    assert first["response_logprobs"] == [-0.5, -0.25, 0.0, 0.0, -1.5, -0.25]
    assert first["num_turns"] == 2 and second["num_turns"] == 2
    assert second["prompt_ids"][0] == 9 and second["response_mask"] == [1, 1, 0, 0, 1, 1]
    extra = first["extra_info"]
    assert extra["policy_version"] == 3 and extra["episode_id"] == "e0turns"
    assert (extra["env_id"], extra["task"], extra["seed"]) == (two.ENV, "book/1", 0)
    assert (extra["sample"], extra["samples"]) == (0, 2) and second["extra_info"]["sample"] == 1
    assert first["reward_score"] == second["reward_score"] == 1.0
