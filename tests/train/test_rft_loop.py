"""`gym train rft` end to end on the tiny policy: one round raises held-out pass@1.

The environment is a one-decision family on local sandboxes (no Docker: what is under
test is the loop, not containment): each task names a key and the agent submits the
door it opens, one of four. The eval tasks ask about the same keys in other words, so
what a round learns from the train tasks is what the eval split measures.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

import gym
import gym.grading
import gym.sandbox
from gym._cli import app
from gym._policy import TinyPolicy
from gym._store import Store
from gym.train import RFTConfig, train_rft

HAVE = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "llguidance"))
pytestmark = pytest.mark.skipif(not HAVE, reason="needs torch, transformers and llguidance")

ENV_ID = "toy/Doors-v0"
DOORS = {"cedar": "D", "otter": "C"}
LOCAL = gym.sandbox.LocalSandboxes(allow_unsafe=True)


class Door(BaseModel):
    """The final state: the door submitted (None when none was)."""

    door: str | None = None


def _tasks() -> list[gym.Task]:
    tasks = []
    for key, door in DOORS.items():
        asks = {
            "train": f"You hold the {key} key. Which door does it open? Submit the door.",
            "eval": f"Which door does the {key} key open? Submit it ({key}).",
        }
        for split, prompt in asks.items():
            name = key if split == "train" else f"{key}-eval"
            tasks.append(
                gym.Task(id=name, family="doors", split=split, prompt=prompt, data={"door": door})
            )
    return tasks


class DoorsEnv(gym.ContainerEnv[Door]):
    """Submit the door of the task's key: A, B, C or D (graded from the final call)."""

    family: ClassVar[str] = "doors"
    image: ClassVar[str] = "toy"
    final_state_type: ClassVar[type[Door]] = Door

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("sandboxes", LOCAL)
        super().__init__(**kwargs)

    @classmethod
    def load_tasks(cls) -> list[gym.Task]:
        return _tasks()

    def setup(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> None:
        """Nothing to prepare."""

    @gym.tool(kind="final")
    def submit(self, door: Literal["A", "B", "C", "D"]) -> str:
        """Submit the door.

        Args:
            door: the door.
        """
        return ""

    def export(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> Door:
        call = self.final_call
        return Door(door=str(call.arguments["door"]) if call else None)

    def grade(
        self, task: gym.Task, final_state: Door, trajectory: Sequence[gym.StepRecord]
    ) -> gym.Verdict:
        right = final_state.door == task.data["door"]
        component = gym.Component(score=float(right), passed=right)
        return gym.grading.compose({"door": component}, [], grader="doors", version="1")

    def oracle_calls(self, task: gym.Task) -> list[gym.ToolCall]:
        return [gym.ToolCall(name="submit", arguments={"door": task.data["door"]})]

    def perturbed_calls(self, task: gym.Task) -> list[gym.ToolCall] | None:
        return None


gym.register(ENV_ID, f"{__name__}:DoorsEnv", max_steps=1, max_seconds=60)

SETTINGS: dict[str, Any] = {
    "envs": [ENV_ID],
    "policy": "tiny",
    "policy_params": {"max_new_tokens": 64},
    "k": 6,
    "cap": 2,
    "lr": 3e-3,
    "epochs": 4,
}
"""The untrained tiny model (init seed 0) answers B for both eval tasks when greedy, and
samples the right doors in some of 6 tries per train task."""


@pytest.mark.train  # a whole round of training: scripts/test-train.sh
def test_one_round_raises_held_out_pass_at_1_and_promotes(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'rft.db'}")
    result = train_rft(RFTConfig(**SETTINGS), store=store, out=tmp_path / "ckpt")
    (first,) = result.rounds
    assert result.baseline_pass_at_1 < 1.0
    assert first.kept and first.promoted
    assert first.pass_at_1_after is not None
    assert first.pass_at_1_after > result.baseline_pass_at_1 == first.pass_at_1_before
    assert result.pass_at_1 == first.pass_at_1_after
    assert first.kept <= first.verified and first.kept <= 2 * len(DOORS)  # the cap
    assert first.losses and first.tokens > 0
    # the checkpoint says what it learnt from: train tasks only, episodes of the store
    manifest = json.loads((Path(first.checkpoint) / "rft.json").read_text())
    assert manifest["tasks"] == sorted(f"{ENV_ID}/{key}" for key in DOORS)
    for episode_id in manifest["episodes"]:
        row = store.episode(episode_id)
        assert row.split == "train" and row.outcome == "pass" and row.run_id == first.collect_run
        assert row.policy_params["policy_version"].endswith(" r1")
    assert TinyPolicy(first.checkpoint).load().model is not None  # a model folder


@pytest.mark.train
def test_a_candidate_not_promoted_gets_its_weights_put_back(tmp_path, monkeypatch) -> None:
    import torch

    from gym.train import _rft

    monkeypatch.setattr(_rft, "promote", lambda best, candidate: False)
    policy = TinyPolicy(max_new_tokens=64, threads=None)
    loaded = policy.load()
    before = {k: v.clone() for k, v in loaded.model.state_dict().items()}
    config = RFTConfig(**SETTINGS)
    store = Store(f"sqlite:///{tmp_path / 'rft.db'}")
    result = train_rft(config, store=store, out=tmp_path, policy=policy)
    (only,) = result.rounds
    assert only.kept and only.losses and only.pass_at_1_after is not None  # it trained
    assert not only.promoted and only.checkpoint == "" and not list(tmp_path.glob("round-*"))
    assert result.pass_at_1 == result.baseline_pass_at_1
    after = loaded.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_the_cli_refuses_held_out_tasks(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'rft.db'}"
    args = ["train", "rft", ENV_ID, "--policy", "tiny", "--tasks", "cedar-eval", "--db", db]
    out = CliRunner().invoke(app, args)
    assert out.exit_code != 0
    assert "held-out" in str(out.exception) and "cedar-eval" in str(out.exception)
