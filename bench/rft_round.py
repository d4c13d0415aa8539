"""One rejection-sampling round on an easy family: held-out pass@1 before and after.

    .venv/bin/python bench/rft_round.py [--env boxgym/Learn-v0] [--policy local] [-k 4]

Runs `gym.train.train_rft` (the code behind ``gym train rft``) for one round: K episodes
per train task from the model at temperature 1 in real containers, the verified
unflagged ones kept (distinct, at most --cap per task), fine-tuned on, then the eval
split run greedily (pass@1) before and after. The default environment is the
``learn`` family (one decision per episode, right one time in four by chance); any
registered id works. Writes docs/benchmarks.md's section ``rft-round-<policy>``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

import gym
from gym._store import Store
from gym.train import RFTConfig, train_rft

sys.path.insert(0, str(Path(__file__).parent))
from _report import machine, write_section  # noqa: E402


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="boxgym/Learn-v0")
    parser.add_argument("--policy", default="local", choices=["local", "tiny"])
    parser.add_argument("-k", type=int, default=4)
    parser.add_argument("--cap", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="Write docs/benchmarks.md.")
    return parser.parse_args()


def main() -> None:
    args = _args()
    torch.set_num_threads(1)
    config = RFTConfig(
        envs=[args.env],
        policy=args.policy,
        policy_params={"max_new_tokens": args.max_new_tokens},
        k=args.k,
        cap=args.cap,
        lr=args.lr,
        epochs=args.epochs,
        seed=args.seed,
    )
    folder = Path(tempfile.mkdtemp(prefix="rft-bench-"))
    start = time.monotonic()
    result = train_rft(
        config,
        store=Store(f"sqlite:///{folder / 'rft.db'}"),
        out=folder / "ckpt",
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
    wall = time.monotonic() - start
    print(json.dumps(result.model_dump(mode="json"), indent=2))
    if args.write:
        write_section(f"rft-round-{args.policy}", _section(args, config, result, wall))


def _section(
    args: argparse.Namespace, config: RFTConfig, result: gym.train.RFTResult, wall: float
) -> str:
    (only,) = result.rounds
    after = "-" if only.pass_at_1_after is None else f"{only.pass_at_1_after:.2f}"
    model = "SmolLM2-135M-Instruct" if args.policy == "local" else "the tiny model (init seed 0)"
    command = (
        f".venv/bin/python bench/rft_round.py --env {args.env} --policy {args.policy} "
        f"-k {args.k} --cap {args.cap} --lr {args.lr:g} --epochs {args.epochs} "
        f"--max-new-tokens {args.max_new_tokens} --seed {args.seed} --write"
    )
    return f"""## One rejection-sampling round ({args.policy} policy, {args.env})

Command: `{command}`
Machine: {machine()}; {wall:.0f} s wall in all.

{model}, constrained decoding: {config.k} episodes per train task at temperature
{config.temperature:g}, verified unflagged ones kept (distinct, at most {config.cap} per
task), {config.epochs} epochs of the supervised loss (AdamW, lr {config.lr:g}, the
grammar-masked distribution), then the eval split greedily.

| held-out pass@1 before | after | episodes | verified | kept | duplicates | fine-tuning | promoted |
|---|---|---|---|---|---|---|---|
| {result.baseline_pass_at_1:.2f} | {after} | {only.episodes} | {only.verified} | {only.kept} | {only.duplicates} | {only.train_s:.1f} s, {len(only.losses)} steps | {"yes" if only.promoted else "no"} |

Runs: baseline evaluation `{result.baseline_run}`, collection `{only.collect_run}`,
candidate evaluation `{only.eval_run or "-"}`.
"""


if __name__ == "__main__":
    main()
