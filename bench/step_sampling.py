"""Step-level against full-trajectory sampling on a multi-step learn env, tiny policy.

    python bench/step_sampling.py [--env boxgym/LearnLock-v0] [--seeds 0,1,2] [--steps 12]
        [--tasks a,b] [--parents 1] [-K 2] [--branches-per-parent 6] [--credit tree]
        [--lr 3e-3] [--mu 4] [--json out.json]

``--env``: `boxgym/LearnLock-v0` (the default: three presses of two buttons, only the
whole combination rewarded, so the credit of each press is the problem) or
`boxgym/LearnSteps-v0` (look, open a drawer, submit: its problem is exploration).
For each seed, `gym train grpo ENV --policy tiny` twice on real containers, on
``--tasks`` (train-split tasks; by default the env's `TASKS`): step-level sampling
with ``--parents`` trajectories per task, each making exactly ``--branches-per-parent`` branches (`StepConfig.branches_per_parent`:
``-K`` before each of its turns while they last, all those left before its last turn),
and full-trajectory sampling with G = parents x (1 + branches per parent) episodes per
task, so both modes make the same number of episodes per step by construction. The
learning rate, mu, temperature, tasks and seeds are the same for both. Each run stops
at ``--steps`` or once its mean reward reaches ``--target``. Per mode it reports:

- **steps to target**: the first step whose mean reward is at least ``--target``, or
  ``-`` when no step reached it; a run stops there. The mean is over all the step's
  episodes in both modes (``--reward-of all``, the default): each is a rollout of the
  step's policy, a branch too (its parent's prefix and its continuation both sampled
  from it), so both modes' means are estimates from the same number of episodes. The
  table also gives the step at which the watch's mean reached it (trajectory mode: the
  same; step mode: its parents', the episodes from a reset, as few as ``--parents`` per
  task); ``--reward-of parents`` stops a run on that one instead;
- **advantage variance**: per step, the variance over every turn the update could train
  of its advantage estimate before the std division, averaged over the steps. A
  trajectory's every turn carries its episode's reward minus its task's mean. Step mode
  with ``--credit tree`` (the default, `StepConfig.credit`): each parent turn and
  branching turn its credit, the value of the state after it minus that before it
  (`gym.train._credit`); with ``--credit branch``: a branch's one branching turn its
  signal minus its fork's mean (`step_advantages`); with it, the ratio
  of the two modes' mean absolute advantage (their scale: the update's step size at one
  learning rate, as both divide by the same task std);
- **noise share** (`noise_share`): per step, the share of that variance that is noise,
  the spread among the estimates of turns with the same state and action (the same
  task and calls so far), averaged over the steps. Unlike the variance, it does not
  move with the credit's scale;
- episodes per step, each step's mean reward over all its episodes (``all`` in the JSON;
  a branch is not independent of its parent, so that mean is not as steady as that of as
  many fresh episodes) and the watch's (``rewards``), seconds.

At the end (``--fork-reps``, 9 by default; 0 skips it), the cost of a fork against a
warm reset in the same run: bench/fork.py's measures (PyRepo, fork(1) and fork(4) at
step 3), interleaved reps, medians.

A benchmark, not a test: on a shared machine its seconds move with the load. The
store is ``--db`` (a temporary SQLite file by default); checkpoints go under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from gym._store import Store, TrainStepRow
from gym.train._grpo import GrpoConfig, train_grpo
from gym.train._grpo_collect import read_collected
from gym.train._steps import StepConfig, branch_signal, read_step_collected, tree_signals

ENV = "boxgym/LearnLock-v0"
"""The env of the run of record (docs/benchmarks.md, "step_sampling")."""
TASKS = {
    "boxgym/LearnLock-v0": "otter",
    "boxgym/LearnSteps-v0": "drawers-01,drawers-08,drawers-10,drawers-11",
}
"""Default train tasks per env. LearnLock: one key (otter: left, right, right), so that
the run measures the credit of each press alone; with four keys a policy must first
learn which key is which: in the probes (docs/benchmarks.md, "step_sampling") both modes
collapsed onto one combination for every key at lr 3e-3, and at 1e-3 trajectory mode
was still at 0.57 after 10 steps. LearnSteps: one task per key, the card in
each drawer (maple right, otter left, cedar left, falcon middle; the ids name neither):
every door and drawer is in play."""


class _Reached(Exception):
    """The run's mean reward reached the target: stop it there."""


Turn = tuple[str, int]
"""An episode id and the index of one of its turns."""


def trajectory_advantages(store: Store, run_id: str) -> dict[Turn, float]:
    """Per trainable turn, its episode's reward minus its task group's mean."""
    episodes = read_collected(store, run_id).episodes
    groups: dict[Hashable, list[float]] = {}
    for e in episodes:
        if e.training_reward is not None:
            groups.setdefault(e.episode.group, []).append(e.training_reward)
    out: dict[Turn, float] = {}
    for e in episodes:
        values = groups.get(e.episode.group, [])
        if e.training_reward is None or len(values) < 2:
            continue
        value = e.training_reward - statistics.fmean(values)
        out |= {(e.episode.episode_id, t): value for t in range(len(e.episode.turns))}
    return out


def step_advantages(
    store: Store, run_id: str, weight: float = 0.0, credit: str = "tree"
) -> dict[Turn, float]:
    """Per turn the update could train, its advantage estimate before any std division.

    ``tree``: the credit of each parent turn and each branch's own turn in a task with a
    spread (`gym.train._steps.tree_signals`); ``branch``: per branch, its branching
    turn's signal minus its fork's mean.
    """
    collected = read_step_collected(store, run_id)
    if credit == "tree":
        tree = tree_signals(collected.episodes, collected.branches, weight)
        return {(c.episode_id, c.turn): c.raw for c in tree.credits}
    groups: dict[Hashable, list[float]] = {}
    signals: dict[Turn, tuple[Hashable, float]] = {}
    for e in collected.episodes:
        branch = collected.branches.get(e.episode.episode_id)
        if branch is None:
            continue
        signal = branch_signal(e.training_reward, branch.step_reward, weight)
        if signal is None:
            continue
        groups.setdefault(branch.group, []).append(signal)
        signals[(e.episode.episode_id, branch.turn)] = (branch.group, signal)
    return {
        turn: s - statistics.fmean(groups[g])
        for turn, (g, s) in signals.items()
        if len(groups[g]) >= 2
    }


def noise_share(store: Store, run_id: str, estimates: dict[Turn, float]) -> float | None:
    """The share of the advantages' variance that is not the state's and the action's.

    A turn's state and action are its task and the calls of its episode up to and
    including it (LearnLock's three presses: 14 per task). The estimates of turns with
    the same state and action should agree: what varies among them is noise (the luck
    of the other turns). Returned: the sum of squares within those groups over the sum
    of squares about the mean, over turns whose state and action came up at least
    twice; a ratio, so a credit's scale (which Adam's update does not see) is out of it.
    """
    steps = store.run_steps(run_id)
    groups = {e.id: f"{e.env_id}/{e.task_id}" for e in store.episodes(run_id)}
    keyed: dict[tuple[str, ...], list[float]] = {}
    for (episode_id, turn), value in estimates.items():
        calls, made = [groups[episode_id]], -1
        for step in steps.get(episode_id, []):
            made += step.completion_token_ids is not None
            if made > turn:
                break
            calls.append(f"{step.tool}:{json.dumps(step.arguments, sort_keys=True)}")
        keyed.setdefault(tuple(calls), []).append(value)
    members = [values for values in keyed.values() if len(values) >= 2]
    pooled = [v for values in members for v in values]
    if len(pooled) < 2:
        return None
    total = statistics.pvariance(pooled) * len(pooled)
    within = sum(statistics.pvariance(g) * len(g) for g in members)
    return within / total if total else None


def one_run(args: argparse.Namespace, seed: int, mode: str, store: Store) -> dict[str, Any]:
    """Train until the target or the step budget; the run's figures."""
    step = None
    if mode == "step":
        step = StepConfig(
            branches=args.branches,
            branch_steps="auto",
            branches_per_parent=args.branches_per_parent,
            credit=args.credit,
        )
    config = GrpoConfig(
        envs=[args.env],
        seed=seed,
        steps=args.steps,
        group_size=args.parents if step else episodes_per_task(args),
        tasks=args.tasks.split(",") if args.tasks else None,
        lr=args.lr,
        updates_per_step=args.mu,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        step_sampling=step,
    )

    def seen(row: TrainStepRow) -> None:
        every = all_episodes_reward(store, row.run_id)
        print(
            f"  {mode} seed {seed} step {row.step}: reward {every:.3f} (all episodes), "
            f"{row.mean_reward:.3f} (the watch's), {row.episodes} episodes, "
            f"{row.collect_s:.0f}+{row.update_s:.0f} s",
            flush=True,
        )
        if (every if args.reward_of == "all" else row.mean_reward) >= args.target:
            raise _Reached

    began = time.monotonic()
    try:
        train_grpo(config, store=store, out=args.out / config.train_id, progress=seen)
    except _Reached:
        pass
    rows = store.train_steps(config.train_id)  # a resumed run's earlier steps too
    per_step = {
        row.run_id: (
            step_advantages(store, row.run_id, credit=args.credit)
            if step
            else trajectory_advantages(store, row.run_id)
        )
        for row in rows
    }
    estimates = [list(values.values()) for values in per_step.values() if len(values) > 1]
    variance = [statistics.pvariance(values) for values in estimates]
    scale = [statistics.fmean(abs(v) for v in values) for values in estimates]
    noise = [n for run, values in per_step.items() if (n := noise_share(store, run, values))]
    every = [round(all_episodes_reward(store, r.run_id), 3) for r in rows]
    watched = [round(r.mean_reward, 3) for r in rows]
    return {
        "mode": mode,
        "seed": seed,
        "steps_to_target": next((i for i, v in enumerate(every) if v >= args.target), None),
        "steps_to_target_watch": next((i for i, v in enumerate(watched) if v >= args.target), None),
        "steps_run": len(rows),
        "rewards": watched,
        "all": every,
        "episodes_per_step": statistics.fmean(r.episodes for r in rows) if rows else 0,
        "advantage_variance": statistics.fmean(variance) if variance else None,
        "variance_per_step": [round(v, 4) for v in variance],
        "advantage_scale": statistics.fmean(scale) if scale else None,
        "noise_share": statistics.fmean(noise) if noise else None,
        "noise_per_step": [round(n, 3) for n in noise],
        "seconds": round(time.monotonic() - began, 1),
    }


def all_episodes_reward(store: Store, run_id: str) -> float:
    """A step's mean training reward over all its episodes, branches included."""
    values = [
        e.training_reward
        for e in read_collected(store, run_id).episodes
        if e.training_reward is not None
    ]
    return statistics.fmean(values) if values else 0.0


def episodes_per_task(args: argparse.Namespace) -> int:
    """Episodes per task per step in either mode: each parent and its branches."""
    return int(args.parents * (1 + args.branches_per_parent))


def table(results: list[dict[str, Any]], target: float) -> str:
    """The markdown table of docs/benchmarks.md's step_sampling section."""
    lines = [
        f"| mode | seed | steps to {target} (all / watch) | steps run | episodes/step "
        "| advantage variance | mean reward per step, all episodes | the watch's | s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        var = "-" if r["advantage_variance"] is None else f"{r['advantage_variance']:.4f}"
        reached = " / ".join(
            "-" if r[key] is None else str(r[key])
            for key in ("steps_to_target", "steps_to_target_watch")
        )
        lines.append(
            f"| {r['mode']} | {r['seed']} | {reached} | {r['steps_run']} | "
            f"{r['episodes_per_step']:.1f} | {var} | {' '.join(map(str, r['all']))} | "
            f"{' '.join(map(str, r['rewards']))} | {r['seconds']:.0f} |"
        )
    return "\n".join(lines)


def ratios(results: list[dict[str, Any]]) -> str:
    """Step mode's advantage variance over trajectory mode's, per seed and pooled.

    Pooled: the mean of every step's variance over the seeds, step mode's over
    trajectory mode's.
    """
    by: dict[tuple[str, int], dict[str, Any]] = {(r["mode"], r["seed"]): r for r in results}
    lines, pooled = [], {"step": [], "trajectory": []}
    for seed in sorted({r["seed"] for r in results}):
        step, whole = by.get(("step", seed)), by.get(("trajectory", seed))
        if not (step and whole and step["advantage_variance"] and whole["advantage_variance"]):
            continue
        ratio = step["advantage_variance"] / whole["advantage_variance"]
        size = step["advantage_scale"] / whole["advantage_scale"]
        noise = ""
        if step.get("noise_share") and whole.get("noise_share"):
            noise = (
                f", noise share {step['noise_share']:.2f} against {whole['noise_share']:.2f} "
                f"({step['noise_share'] / whole['noise_share']:.2f})"
            )
        lines.append(
            f"seed {seed}: step/trajectory advantage variance {ratio:.2f}, mean |advantage| "
            f"{size:.2f}{noise}"
        )
        for mode, run in (("step", step), ("trajectory", whole)):
            pooled[mode] += run["variance_per_step"]
    if pooled["step"] and pooled["trajectory"]:
        ratio = statistics.fmean(pooled["step"]) / statistics.fmean(pooled["trajectory"])
        lines.append(f"pooled: {ratio:.2f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default=ENV, choices=sorted(TASKS))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--steps", type=int, default=12, help="most steps per run")
    parser.add_argument("--target", type=float, default=0.8)
    parser.add_argument("--parents", type=int, default=1, help="step mode: parents per task")
    parser.add_argument("-K", "--branches", type=int, default=2, help="step mode: per fork")
    parser.add_argument(
        "--branches-per-parent", type=int, default=6, help="step mode (a multiple of K)"
    )
    parser.add_argument(
        "--credit", default="tree", choices=["tree", "branch"], help="step mode: what trains"
    )
    parser.add_argument(
        "--reward-of",
        default="all",
        choices=["all", "parents"],
        help="the reward a run stops at: the mean over all the step's episodes, or the "
        "watch's (step mode: its parents')",
    )
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--mu", type=int, default=4, help="optimizer steps per batch")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument(
        "--tasks", default=None, help="comma-separated train tasks (default: the env's; all: '')"
    )
    parser.add_argument("--modes", default="trajectory,step")
    parser.add_argument(
        "--fork-reps", type=int, default=9, help="reps of the fork cost at the end (0: none)"
    )
    parser.add_argument("--db", default="")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    if args.tasks is None:
        args.tasks = TASKS[args.env]
    scratch = Path(tempfile.mkdtemp(prefix="boxgym-step-sampling-"))
    args.out = args.out or scratch / "ckpt"
    store = Store(args.db or f"sqlite:///{scratch / 'runs.db'}")
    results = []
    for seed in (int(s) for s in args.seeds.split(",")):
        for mode in args.modes.split(","):
            results.append(one_run(args, seed, mode, store))
            if args.json:
                args.json.write_text(json.dumps(results, indent=1))
    print(f"load {os.getloadavg()[0]:.1f}")
    print(table(results, args.target))
    print(ratios(results))
    if args.fork_reps:
        print(fork_table(args.fork_reps))


def fork_table(reps: int, k: int = 4) -> str:
    """What a fork costs against a warm reset, in this run (bench/fork.py's measures)."""
    from fork import measure, table  # bench/fork.py, beside this file

    rows = measure(reps, k, replay=False)
    head = f"fork cost, PyRepo at step 3, interleaved reps, load {os.getloadavg()[0]:.1f}:"
    return f"{head}\n{table(rows)}"


if __name__ == "__main__":
    main()
