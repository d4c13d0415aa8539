"""`gym train grpo` end to end on real containers: it learns, the watch stops a leaky run.

These train a tiny policy for minutes on a 2-core machine: they carry the ``train``
marker, so CI runs them as a command of their own (``pytest -m train tests/train``).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from typer.testing import CliRunner

from gym._cli import app
from gym._store import Store

HAVE = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "llguidance"))
pytestmark = [
    pytest.mark.skipif(not HAVE, reason="needs torch, transformers and llguidance"),
    pytest.mark.docker,
]


def _train(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    out = tmp_path / "ckpt"
    result = CliRunner().invoke(
        app,
        ["train", "grpo", *args, "--db", db, "--out", str(out), "--json"],
        catch_exceptions=False,
    )
    stdout = result.stdout
    return result.exit_code, json.loads(stdout[stdout.index("{") :]), result.stderr


@pytest.mark.train
@pytest.mark.timeout(1800)  # 12 min measured under load: at least 2x its run time
def test_grpo_on_the_learn_family_goes_from_chance_to_mostly_right(tmp_path):
    png = tmp_path / "train.png"
    code, summary, _ = _train(
        tmp_path, "boxgym/Learn-v0", "--policy", "tiny", "--seed", "0", "--plot", str(png)
    )
    rewards = summary["mean_reward"]
    assert code == 0 and summary["stopped"] == ""
    assert len(rewards) == summary["steps"] >= 2
    assert rewards[0] <= 0.3 and rewards[-1] >= 0.8, rewards
    # every step is a run of its own in the store, its episodes from one policy version
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    rows = store.train_steps(summary["train_id"])
    assert [r.step for r in rows] == list(range(len(rewards)))
    for row in rows:
        episodes = store.episodes(row.run_id)
        assert len(episodes) == row.episodes == 32
        assert {e.policy_params["policy_version"] for e in episodes} == {row.step}
        assert {e.split for e in episodes} == {"train"}
    info = json.loads((tmp_path / "ckpt" / "checkpoint.json").read_text())
    assert info["version"] == len(rewards)
    assert len(info["episodes"]) == sum(r.episodes - r.infra_errors for r in rows)
    assert info["tasks"] == [f"boxgym/Learn-v0/{t}" for t in ("cedar", "falcon", "maple", "otter")]
    with Image.open(png) as image:
        left, _ = json.loads(image.text["boxgym"])  # what the plot shows (gym._reports._plot)
    assert left["series"][0]["y"] == pytest.approx(rewards, abs=1e-3)


@pytest.mark.train
@pytest.mark.timeout(900)
def test_the_watch_stops_a_policy_rewarded_by_a_leaky_visible_check(tmp_path):
    code, summary, stderr = _train(tmp_path, "boxgym/LearnLeaky-v0", "--seed", "0")
    assert code == 2
    assert "reward-hacking watch" in summary["stopped"] and "hidden pass rate" in summary["stopped"]
    reward, hidden = summary["mean_reward"], summary["hidden_pass_rate"]
    assert reward[-1] - hidden[-1] > reward[0] - hidden[0] + 0.3
    assert len(reward) < 10  # stopped before the configured steps


def test_training_refuses_held_out_tasks_before_running_anything(tmp_path):
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    result = CliRunner().invoke(
        app, ["train", "grpo", "boxgym/Learn-v0", "--tasks", "otter-reworded", "--db", db]
    )
    assert result.exit_code != 0
    assert "held-out" in str(result.exception) + result.output
