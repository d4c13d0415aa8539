"""Step-level against full-trajectory sampling with an exact, tabular policy: no containers.

    python bench/step_sampling_tabular.py [--presses 3,5] [--seeds 40] [--lr 0.1,0.3]
        [--parents 4] [-K 2] [--branches-per-parent 6|auto] [--mu 4] [--steps 15]
        [--step-reward W] [--judge-accuracy A] [--sees presses|turn] [--write [--section S]]

`bench/step_sampling.py` compares the two modes with the tiny language model on real
LearnLock-v0 containers, three seeds in 20 minutes. This asks the same question of an
idealized learner, many seeds in seconds, so that its answer is not the tiny model's nor
the seeds': a lock of N presses of two buttons (one combination, reward 1 iff every press
is right, as LearnLock's), a policy with one logit per state (the presses so far), Adam,
``--mu`` updates per step. Both modes make the same episodes per step, as the real
benchmark's do: trajectory sampling G = parents x (1 + branches per parent) rollouts from
the reset, each turn's advantage its episode's reward minus the group's mean; step
sampling ``--parents`` rollouts, each forked K at a time before each of its turns while
its branches last (the rest before its last turn), each credited by boxgym's own
`gym.train._credit.tree_credit` (``tree``: step + outcome, the default; ``outcome``: the
value after the turn minus the root's; ``step``: the value after it minus that before
it). Every advantage is divided by the task's signal std, as ``grpo`` does.

Issue 32's premise, "at the same dense reward": ``--step-reward W`` gives both modes a
judge of each press (1 when it is the key's, right with ``--judge-accuracy``): trajectory
sampling adds W times the mean of an episode's step rewards to its signal, step sampling
W times a branch's branching step reward (`gym.train._steps.branch_signal`). ``--sees
turn`` gives the policy one logit per turn instead of per prefix, a policy that carries
what it learnt at one prefix to the others (as a language model partly does).

Per mode and learning rate, over ``--seeds`` seeds: the steps until a step's mean reward
over all its episodes reaches 0.8 (mean and median; a run that never does counts as
``--steps``), how many seeds reached it, and two measures of the advantage estimates as
bench/step_sampling.py takes them, averaged over the steps: their variance and the
**noise**, the variance among the estimates of turns with the same state and action (what
differs among them is the luck of other turns). ``--write`` puts the table in
docs/benchmarks.md (section ``step_sampling_tabular``).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from gym.train._credit import tree_credit
from gym.train._steps import branch_signal

sys.path.insert(0, str(Path(__file__).parent))
from _report import write_section  # noqa: E402

State = tuple[int, ...]
"""The presses so far (0: left, 1: right)."""
Sample = tuple[State, int, float]
"""A credited turn: its state, its press and its advantage."""


@dataclass
class Lock:
    """The lock, the tabular policy and its optimizer."""

    presses: int
    seed: int
    lr: float
    sees: str = "presses"
    """The policy's state: ``presses`` (the presses so far) or ``turn`` (their count)."""
    theta: dict[State, float] = field(default_factory=dict)
    moments: dict[State, tuple[float, float]] = field(default_factory=dict)
    updates: int = 0

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)
        self.key = tuple(int(b) for b in self.rng.integers(0, 2, self.presses))

    def state(self, presses: Sequence[int]) -> State:
        """What the policy conditions on before its next press."""
        return tuple(presses) if self.sees == "presses" else (len(presses),)

    def rollout(self, prefix: State = ()) -> tuple[State, float]:
        """Play on from ``prefix`` to the N-th press: the presses and the reward."""
        presses = list(prefix)
        while len(presses) < self.presses:
            right = 1 / (1 + math.exp(-self.theta.get(self.state(presses), 0.0)))
            presses.append(int(self.rng.random() < right))
        return tuple(presses), float(tuple(presses) == self.key)

    def judge(self, presses: State, turn: int, accuracy: float) -> float:
        """A dense step reward: whether press ``turn`` is the key's, right with ``accuracy``."""
        right = presses[turn] == self.key[turn]
        if accuracy < 1 and self.rng.random() >= accuracy:
            right = not right
        return float(right)

    def update(self, samples: Sequence[Sample]) -> None:
        """One Adam step on the mean of the samples' policy-gradient terms."""
        grads: dict[State, float] = {}
        for presses, press, advantage in samples:
            state = self.state(presses)
            right = 1 / (1 + math.exp(-self.theta.get(state, 0.0)))
            grads[state] = grads.get(state, 0.0) + advantage * (press - right) / len(samples)
        self.updates += 1
        for state, g in grads.items():
            m, v = self.moments.get(state, (0.0, 0.0))
            m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
            self.moments[state] = (m, v)
            m_hat, v_hat = m / (1 - 0.9**self.updates), v / (1 - 0.999**self.updates)
            self.theta[state] = self.theta.get(state, 0.0) + self.lr * m_hat / (
                math.sqrt(v_hat) + 1e-8
            )


@dataclass
class Dense:
    """The dense step reward both modes get (issue 32's "at the same dense reward")."""

    weight: float = 0.0
    """Its weight in a signal (0: none, outcome reward alone)."""
    accuracy: float = 1.0
    """How often the judge is right about a press."""


def trajectory_step(
    lock: Lock, group: int, dense: Dense
) -> tuple[list[Sample], list[float], list[float]]:
    """Trajectory sampling: each turn's raw advantage, the rewards and the signals.

    An episode's signal is its reward plus ``dense.weight`` times the mean of its presses'
    step rewards: every turn of it gets the same advantage.
    """
    played = [lock.rollout() for _ in range(group)]
    rewards = [r for _, r in played]
    signals = [
        r + dense.weight * statistics.fmean(lock.judge(p, t, dense.accuracy) for t in range(len(p)))
        if dense.weight
        else r
        for p, r in played
    ]
    if len(set(signals)) < 2:
        return [], rewards, signals
    mean = statistics.fmean(signals)
    raw = [
        (p[:t], p[t], v - mean)
        for (p, _), v in zip(played, signals, strict=True)
        for t in range(lock.presses)
    ]
    return raw, rewards, signals


def forks(presses: int, branches: int, k: int) -> list[int]:
    """The turn each branch forks before: K before each turn while they last."""
    turns = [t for t in range(presses) for _ in range(k)][:branches]
    return turns + [presses - 1] * (branches - len(turns))


def step_step(
    lock: Lock, parents: int, branch_turns: list[int], term: str, dense: Dense
) -> tuple[list[Sample], list[float], list[float]]:
    """Step sampling credited by `tree_credit`: the credited turns, the rewards, the signals.

    A branch's signal is its reward plus ``dense.weight`` times the step reward of its
    branching turn (`gym.train._steps.branch_signal`); a parent's is its reward.
    """
    played: dict[str, tuple[State, float]] = {}
    signals: dict[str, float] = {}
    lineage: dict[str, Any] = {}
    for p in range(parents):
        played[f"p{p}"] = parent = lock.rollout()
        signals[f"p{p}"] = parent[1]
        for b, turn in enumerate(branch_turns):
            played[f"p{p}b{b}"] = branch = lock.rollout(parent[0][:turn])
            step = lock.judge(branch[0], turn, dense.accuracy) if dense.weight else None
            signals[f"p{p}b{b}"] = branch_signal(branch[1], step, dense.weight) or 0.0
            lineage[f"p{p}b{b}"] = SimpleNamespace(parent_id=f"p{p}", turn=turn)
    episodes = [
        SimpleNamespace(episode=SimpleNamespace(episode_id=i, group="lock", turns=p))
        for i, (p, _) in played.items()
    ]
    tree = tree_credit(episodes, lineage, signals)  # type: ignore[arg-type]
    raw = []
    for c in tree.credits:
        presses = played[c.episode_id][0]
        value = {"tree": c.raw, "outcome": c.outcome, "step": c.step}[term]
        raw.append((presses[: c.turn], presses[c.turn], value))
    return raw, [r for _, r in played.values()], list(signals.values())


def noise(estimates: Sequence[Sample]) -> float | None:
    """The variance among estimates of the same state and press (pooled), if any repeat."""
    keyed: dict[tuple[State, int], list[float]] = {}
    for state, press, value in estimates:
        keyed.setdefault((state, press), []).append(value)
    groups = [g for g in keyed.values() if len(g) >= 2]
    count = sum(len(g) for g in groups)
    return sum(statistics.pvariance(g) * len(g) for g in groups) / count if count else None


def run(opts: argparse.Namespace, presses: int, lr: float, seed: int, mode: str) -> dict[str, Any]:
    """One training run: the step it reached 0.8 at (or None) and its advantage figures."""
    lock = Lock(presses, seed, lr, opts.sees)
    dense = Dense(opts.step_reward, opts.judge_accuracy)
    branches = opts.branches_per_parent or opts.K * presses
    group = opts.parents * (1 + branches)
    turns = forks(presses, branches, opts.K)
    variance: list[float] = []
    noisy: list[float] = []
    for step in range(opts.steps):
        if mode == "trajectory":
            raw, rewards, signals = trajectory_step(lock, group, dense)
        else:
            raw, rewards, signals = step_step(lock, opts.parents, turns, mode, dense)
        if statistics.fmean(rewards) >= opts.target:
            return {"reached": step, "variance": variance, "noise": noisy}
        if len(raw) > 1:
            variance.append(statistics.pvariance([v for *_, v in raw]))
            if (n := noise(raw)) is not None:
                noisy.append(n)
            std = statistics.stdev(signals)  # grpo's division; nonzero: the values differ
            samples = [(s, a, v / std) for s, a, v in raw if v]
            for _ in range(opts.mu):
                lock.update(samples)
    return {"reached": None, "variance": variance, "noise": noisy}


def table(opts: argparse.Namespace) -> str:
    """Every (presses, lr, mode) over the seeds, as a markdown table."""
    if opts.branches_per_parent:
        group = opts.parents * (1 + opts.branches_per_parent)
        per_step = (
            f"{group} in both modes (step: {opts.parents} parents x "
            f"(1 + {opts.branches_per_parent}) branches, K = {opts.K})"
        )
    else:
        per_step = (
            f"{opts.parents} x (1 + K x presses) in both modes (step: {opts.parents} parents, "
            f"K = {opts.K} branches before each of their turns)"
        )
    lines = [
        f"Episodes per step: {per_step}; {opts.seeds} seeds; "
        f"mu {opts.mu}; at most {opts.steps} steps (a run short of {opts.target} counts "
        f"{opts.steps}); the policy sees {opts.sees}; "
        + (
            f"dense step reward weight {opts.step_reward}, judge accuracy {opts.judge_accuracy}."
            if opts.step_reward
            else "outcome reward only."
        ),
        "",
        "| presses | lr | mode | reached | steps to 0.8, mean / median | advantage variance "
        "| noise | x trajectory's (variance / noise) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for presses in opts.presses:
        for lr in opts.lr:
            base: tuple[float, float] | None = None
            for mode in opts.modes:
                runs = [run(opts, presses, lr, s, mode) for s in range(opts.seeds)]
                steps = [r["reached"] if r["reached"] is not None else opts.steps for r in runs]
                var = statistics.fmean(v for r in runs for v in r["variance"])
                noisy = statistics.fmean(n for r in runs for n in r["noise"])
                base = base or (var, noisy)
                lines.append(
                    f"| {presses} | {lr} | {mode} | {sum(r['reached'] is not None for r in runs)}"
                    f"/{len(runs)} | {statistics.fmean(steps):.2f} / {statistics.median(steps):g} "
                    f"| {var:.4f} | {noisy:.4f} | {var / base[0]:.2f} / {noisy / base[1]:.2f} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--presses", default="3,5", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--lr", default="0.1,0.3", type=lambda s: [float(x) for x in s.split(",")])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--parents", type=int, default=4)
    parser.add_argument("-K", type=int, default=2)
    parser.add_argument(
        "--branches-per-parent",
        type=lambda v: None if v == "auto" else int(v),
        default=6,
        help="branches per parent, or auto: K before each of its turns",
    )
    parser.add_argument("--mu", type=int, default=4)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--target", type=float, default=0.8)
    parser.add_argument(
        "--modes", default="trajectory,tree,outcome,step", type=lambda s: s.split(",")
    )
    parser.add_argument(
        "--step-reward",
        type=float,
        default=0.0,
        help="weight of a dense step reward (a judge of each press) in both modes' signals",
    )
    parser.add_argument("--judge-accuracy", type=float, default=1.0)
    parser.add_argument(
        "--sees",
        choices=["presses", "turn"],
        default="presses",
        help="the policy's state: the presses so far, or only how many",
    )
    parser.add_argument("--section", default="step_sampling_tabular")
    parser.add_argument("--write", action="store_true", help="into docs/benchmarks.md")
    opts = parser.parse_args()
    body = table(opts)
    print(body)
    if opts.write:
        write_section(opts.section, body)


if __name__ == "__main__":
    main()
