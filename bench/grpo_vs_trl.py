"""One GRPO step on the tiny policy: boxgym's trainer against TRL's GRPOTrainer.

    bench/grpo_vs_trl.sh [--steps 3] [--seed 0] [--containers]

(the script installs TRL 1.16.0 into bench/.trl-site, for this benchmark only, and runs
this file with it on the path.)

Both sides train a fresh tiny model (`gym._policy._tiny.build_tiny`, same seed, same
initial weights) on the four train-split prompts of ``boxgym/Learn-v0`` exactly as a
policy renders them (system prompt, tools section, task prompt; the same token ids),
eight completions per prompt, one reward per completion from the Learn answer check in
process, then four optimizer steps on the 32 completions: Adam (TRL: AdamW, no weight
decay), lr 3e-3 constant, no gradient clipping, clip range 0.2 / 0.28, beta 0, token-mean
aggregation (TRL's ``dapo``), temperature 1. No containers on either side, CPU, float32,
the same torch thread count.

- boxgym: the 32 turns come from the policy that ``gym train grpo`` samples with
  (`LocalWeights.policy_factory`: one ``generate`` per episode under the tool-call
  grammar, logprobs recorded), then the training loop's own update path
  (`grpo_samples`, `LocalWeights.samples_allowed` replaying the grammar,
  `LocalWeights.batch`, `LocalWeights.update` with mu = 4).
- TRL: `GRPOTrainer` with ``num_generations=8``, a batch of 32, ``num_iterations=4``; one
  boxgym step is four TRL optimizer steps (one generation). It has no grammar: its
  completions are unconstrained, so their length is capped at about the length of
  boxgym's (``max_completion_length``, set from boxgym's warm-up step).

The two are interleaved (A B A B), the first step of each side is a warm-up, and the
medians of the others are reported: per step, generation (sampling and scoring),
update (everything else: samples, masks, reference logprobs, the optimizer steps) and
their total. ``--containers`` instead runs ``gym train grpo`` for two steps with Docker
and reports its per-step collect and update seconds from the store, to show what the
containers add to the same step.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's gym, whichever the venv installed
SITE = HERE / ".trl-site"
if SITE.is_dir():
    sys.path.append(str(SITE))  # after the venv: TRL and what the venv lacks, nothing else

import torch  # noqa: E402

from gym._envs._registry import make  # noqa: E402
from gym._envs._splits import training_tasks  # noqa: E402
from gym._policy._local import render_prompt  # noqa: E402
from gym._policy._parse import parse_tool_call  # noqa: E402
from gym._policy._tiny import build_tiny  # noqa: E402
from gym._run._rollout import SYSTEM_PROMPT  # noqa: E402
from gym.train._episodes import TrainEpisode, grpo_samples  # noqa: E402
from gym.train._grpo_collect import env_tools  # noqa: E402
from gym.train._grpo_weights import LocalWeights  # noqa: E402
from gym.train._loss import LossConfig  # noqa: E402
from gym.train._samples import turn_tokens  # noqa: E402

sys.path.insert(0, str(HERE))
from _report import machine  # noqa: E402

ENV = "boxgym/Learn-v0"
G = 8
MU = 4
LR = 3e-3
TEMPERATURE = 1.0
MAX_NEW_TOKENS = 96


# -- the shared workload -----------------------------------------------------------------


class Workload:
    """The Learn train tasks, their tools, their prompts and their answers."""

    def __init__(self) -> None:
        self.tasks = training_tasks(ENV)
        self.tools = env_tools(ENV)
        env = make(ENV)
        try:
            module = sys.modules[type(env.unwrapped).__module__]
            self.answers = {t.id: module.hidden_answer(t) for t in self.tasks}
        finally:
            env.close()

    def messages(self, task: Any) -> list[dict[str, Any]]:
        """The conversation's first two messages, as `gym._run._rollout.run_episode` starts it."""
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": task.prompt},
        ]

    def reward(self, text: str, answer: str) -> float:
        """The Learn answer check in process: 1 when the submitted choice is the answer."""
        call = parse_tool_call(text, [str(t["function"]["name"]) for t in self.tools]).call
        return float(call is not None and call.arguments.get("choice") == answer)


# -- boxgym ------------------------------------------------------------------------------


class Boxgym:
    """boxgym's step: the training loop's sampler and update path, without containers."""

    def __init__(self, work: Workload, seed: int) -> None:
        self.work, self.seed = work, seed
        self.weights = LocalWeights.create("tiny", "tiny", seed=seed, lr=LR)
        settings = {"temperature": TEMPERATURE, "max_new_tokens": MAX_NEW_TOKENS, "seed": seed}
        self.policy: Any = self.weights.policy_factory(**settings)()
        self.loss = LossConfig()
        tok = self.weights.loaded.tokenizer
        self.prompts = {
            t.id: tok(render_prompt(tok, work.messages(t), work.tools), add_special_tokens=False)[
                "input_ids"
            ]
            for t in work.tasks
        }

    def step(self, index: int) -> dict[str, Any]:
        work, weights = self.work, self.weights
        start = time.perf_counter()
        episodes = []
        for task in work.tasks:
            for g in range(G):
                # as the runner does: each of the G episodes has its own reset seed
                self.policy.start(task, SimpleNamespace(np_random_seed=index * 1000 + g))
                turn = self.policy.act(work.messages(task), work.tools)
                if turn.prompt_token_ids != self.prompts[task.id]:
                    raise SystemExit("the policy's prompt ids differ from the rendered prompt's")
                reward = work.reward(str(turn.message.get("content", "")), work.answers[task.id])
                episodes.append(
                    TrainEpisode(
                        episode_id=f"{index}:{task.id}:{g}",
                        env_id=ENV,
                        group=f"{ENV}/{task.id}",
                        split="train",
                        outcome="pass" if reward else "fail",
                        reward=reward,
                        turns=turn_tokens([turn]),
                    )
                )
        generated = time.perf_counter()
        # gym.train._grpo._Loop._update, step for step
        eos = weights.loaded.tokenizer.eos_token_id
        built = grpo_samples(episodes, "grpo", eos_token_id=eos)
        sampled = time.perf_counter()
        owners = {e.episode_id: e for e in episodes}
        width = tokens = 0
        if built.samples:
            allowed = weights.samples_allowed(
                built.samples,
                [owners[s.episode_id].turns for s in built.samples],
                [work.tools] * len(built.samples),
            )
            masked = time.perf_counter()
            batch = weights.batch(built.samples, allowed)
            collated = time.perf_counter()
            weights.update(batch, self.loss, iterations=MU, temperature=TEMPERATURE)
            width, tokens = int(batch.input_ids.shape[1]), batch.tokens
        else:
            weights.skip()
            masked = collated = time.perf_counter()
        end = time.perf_counter()
        lengths = [len(t.completion) for e in episodes for t in e.turns]
        return {
            "total_s": end - start,
            "generation_s": generated - start,
            "update_s": end - generated,
            "samples_s": sampled - generated,
            "grammar_replay_s": masked - sampled,
            "collate_s": collated - masked,
            "optimizer_s": end - collated,
            "sequences": len(built.samples),
            "width": width,
            "sampled_tokens": tokens,
            "completion_tokens": sum(lengths),
            "completion_max": max(lengths),
            "mean_reward": statistics.fmean(e.reward or 0.0 for e in episodes),
        }


# -- TRL ---------------------------------------------------------------------------------


class Trl:
    """TRL's GRPOTrainer on the same model, prompts and reward; stepped from a callback."""

    def __init__(self, work: Workload, seed: int, completion_length: int, steps: int) -> None:
        from datasets import Dataset
        from datasets.table import InMemoryTable
        from transformers import PrinterCallback, TrainerCallback
        from trl import GRPOConfig, GRPOTrainer

        self.work = work
        loaded = build_tiny(seed)
        tok = loaded.tokenizer
        texts = [render_prompt(tok, work.messages(t), work.tools) for t in work.tasks]
        columns = {"prompt": texts, "answer": [work.answers[t.id] for t in work.tasks]}
        # An explicit fingerprint: datasets' own hashes the table with dill, which fails on
        # the pyarrow this mirror serves (and the dataset is never cached anyway).
        data = Dataset(InMemoryTable.from_pydict(columns), fingerprint="grpo-vs-trl")

        def learn_answer(completions: list[str], answer: list[str], **_: Any) -> list[float]:
            return [work.reward(c, a) for c, a in zip(completions, answer, strict=True)]

        self.out = tempfile.mkdtemp(prefix="grpo-vs-trl-")
        config = GRPOConfig(
            output_dir=self.out,
            per_device_train_batch_size=len(work.tasks) * G,  # one optimizer step sees all 32
            gradient_accumulation_steps=1,
            num_generations=G,
            num_iterations=MU,
            max_steps=MU * steps,
            learning_rate=LR,
            lr_scheduler_type="constant",
            warmup_steps=0,
            weight_decay=0.0,
            max_grad_norm=0.0,  # boxgym does not clip gradients
            epsilon=0.2,
            epsilon_high=0.28,
            beta=0.0,
            loss_type="dapo",  # token_mean, boxgym's default aggregation
            scale_rewards="group",  # (r - mean) / std within each group, boxgym's grpo
            temperature=TEMPERATURE,
            top_p=1.0,
            top_k=0,
            max_completion_length=completion_length,
            shuffle_dataset=False,
            use_vllm=False,
            use_cpu=True,
            bf16=False,
            fp16=False,
            seed=seed,
            report_to="none",
            logging_steps=10**9,
            save_strategy="no",
            disable_tqdm=True,
            log_completions=False,
            dataloader_num_workers=0,
        )
        self.trainer = GRPOTrainer(
            model=loaded.model,
            reward_funcs=learn_answer,
            args=config,
            train_dataset=data,
            processing_class=tok,
        )
        self.prompt_ids = tok(texts)["input_ids"]
        self._phase: dict[str, float] = {"generation_s": 0.0}
        self._lengths: list[int] = []
        self._wrap("_generate", self._record_lengths)
        self._wrap("_calculate_rewards")
        self.on_step: Callable[[int], None] = lambda _: None
        self.rows: list[dict[str, Any]] = []
        outer = self

        class Stepper(TrainerCallback):  # type: ignore[misc]
            def on_train_begin(self, *_: Any, **__: Any) -> None:
                outer._started = time.perf_counter()

            def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
                if state.global_step % MU == 0:
                    outer._finish_step(state.global_step // MU - 1)

        self.trainer.add_callback(Stepper())
        self.trainer.remove_callback(PrinterCallback)  # its end-of-training dict

    def _wrap(self, name: str, after: Callable[[Any], None] | None = None) -> None:
        """Time one of the trainer's methods into the generation phase."""
        inner = getattr(self.trainer, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            out = inner(*args, **kwargs)
            self._phase["generation_s"] += time.perf_counter() - start
            if after is not None:
                after(out)
            return out

        setattr(self.trainer, name, timed)

    def _record_lengths(self, out: Any) -> None:
        prompt_ids, completion_ids = out[0], out[1]
        self._lengths = [len(c) for c in completion_ids]
        self._prompt_ids_seen = [list(p) for p in prompt_ids]

    def _finish_step(self, index: int) -> None:
        total = time.perf_counter() - self._started
        if not all(list(p) in self.prompt_ids for p in self._prompt_ids_seen):
            raise SystemExit("TRL's prompt ids differ from the rendered prompts'")
        gen = self._phase["generation_s"]
        self.rows.append(
            {
                "total_s": total,
                "generation_s": gen,
                "update_s": total - gen,
                "sequences": len(self._lengths),
                "completion_tokens": sum(self._lengths),
                "completion_max": max(self._lengths),
            }
        )
        self.on_step(index)  # the other side's step runs here, between two of TRL's
        self._phase["generation_s"] = 0.0
        self._started = time.perf_counter()

    def run(self) -> None:
        try:
            self.trainer.train()
        finally:
            shutil.rmtree(self.out, ignore_errors=True)  # its output_dir (nothing is saved)


# -- the real run with containers --------------------------------------------------------


def container_run(seed: int, steps: int) -> list[dict[str, Any]]:
    """``gym train grpo`` on Learn for a few steps (Docker); its stored per-step seconds."""
    from gym._store import Store

    with tempfile.TemporaryDirectory(prefix="grpo-vs-trl-") as tmp:
        url = f"sqlite:///{tmp}/store.db"
        cmd = [
            sys.executable,
            "-c",
            "from gym._cli import main; main()",  # this checkout's gym (run from its root)
            "train",
            "grpo",
            ENV,
            "--policy",
            "tiny",
            "--seed",
            str(seed),
            "--steps",
            str(steps),
            "--db",
            url,
            "--out",
            f"{tmp}/ckpt",
            "--json",
        ]
        env = {**os.environ, "GYM_DATA": tmp}
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=env, cwd=HERE.parent, timeout=900
        )
        if proc.returncode not in (0, 2):
            raise SystemExit(f"gym train grpo failed:\n{proc.stderr[-2000:]}")
        train_id = json.loads(proc.stdout)["train_id"]
        rows = Store(url).train_steps(train_id)
        return [
            {
                "step": r.step,
                "collect_s": r.collect_s,
                "update_s": r.update_s,
                "episodes": r.episodes,
                "infra_errors": r.infra_errors,
                "tokens": r.tokens,
            }
            for r in rows
        ]


# -- report ------------------------------------------------------------------------------


def median(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def load() -> str:
    return " / ".join(f"{v:.1f}" for v in os.getloadavg())


def report(
    box: list[dict[str, Any]],
    trl: list[dict[str, Any]],
    args: argparse.Namespace,
    length: int,
    loads: tuple[str, str],
) -> None:
    keys = ("total_s", "generation_s", "update_s")
    b = {k: median(box, k) for k in keys}
    t = {k: median(trl, k) for k in keys}
    ratio = {k: b[k] / t[k] for k in keys}
    print(f"\nMachine: {machine()}; torch threads {args.threads} on both sides")
    print(f"Load average (1/5/15 min): {loads[0]} at the start, {loads[1]} at the end")
    print(
        f"Medians of {len(box)} steps per side after one warm-up each, interleaved; "
        f"TRL max_completion_length {length}.\n"
    )
    print("| per step | boxgym (s) | TRL GRPOTrainer (s) | boxgym / TRL |")
    print("|---|---|---|---|")
    for k, name in zip(keys, ("total", "generation + reward", "update (mu = 4)"), strict=True):
        print(f"| {name} | {b[k]:.2f} | {t[k]:.2f} | {ratio[k]:.2f}x |")
    parts = ("samples_s", "grammar_replay_s", "collate_s", "optimizer_s")
    print(
        "\nboxgym update, medians: "
        + ", ".join(f"{p[:-2]} {median(box, p):.3f} s" for p in parts)
        + f"; {median(box, 'sequences'):.0f} sequences of width {median(box, 'width'):.0f}, "
        f"{median(box, 'sampled_tokens'):.0f} sampled tokens"
    )
    print(
        f"completion tokens per step, medians: boxgym {median(box, 'completion_tokens'):.0f} "
        f"(longest {max(r['completion_max'] for r in box)}), "
        f"TRL {median(trl, 'completion_tokens'):.0f} (longest "
        f"{max(r['completion_max'] for r in trl)})"
    )
    result = {
        "bench": "grpo_vs_trl",
        "steps": args.steps,
        "seed": args.seed,
        "threads": args.threads,
        "load": loads,
        "trl_max_completion_length": length,
        "boxgym": {k: round(v, 4) for k, v in b.items()},
        "trl": {k: round(v, 4) for k, v in t.items()},
        "ratio_total": round(ratio["total_s"], 3),
        "ratio_generation": round(ratio["generation_s"], 3),
        "ratio_update": round(ratio["update_s"], 3),
        "boxgym_steps": box,
        "trl_steps": trl,
    }
    print("\n" + json.dumps(result))


def report_containers(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"\n`gym train grpo {ENV} --policy tiny --seed {args.seed} --steps 2`, from the store:")
    print("| step | collect (s) | update (s) | episodes | infra errors | sampled tokens |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['step']} | {r['collect_s']:.1f} | {r['update_s']:.2f} | {r['episodes']} "
            f"| {r['infra_errors']} | {r['tokens']} |"
        )
    print("\n" + json.dumps({"bench": "grpo_vs_trl_containers", "seed": args.seed, "steps": rows}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="measured steps per side")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch threads, both sides")
    parser.add_argument(
        "--containers",
        action="store_true",
        help="instead: run `gym train grpo` for two steps with Docker (its per-step seconds)",
    )
    args = parser.parse_args()
    if args.containers:
        report_containers(container_run(args.seed, 2), args)
        return
    os.environ.setdefault("TQDM_DISABLE", "1")
    torch.set_num_threads(args.threads)
    started = load()
    work = Workload()

    box = Boxgym(work, args.seed)
    warm = box.step(0)  # warm-up: grammar tokenizer, reserves, first allocations
    length = warm["completion_max"]
    box_rows: list[dict[str, Any]] = []
    trl = Trl(work, args.seed, length, args.steps + 1)
    torch.set_num_threads(args.threads)  # as set: neither side changes it

    def boxgym_step(index: int) -> None:
        if index < args.steps:
            box_rows.append(box.step(index + 1))
            last = box_rows[-1]
            print(
                f"step {index + 1}: boxgym {last['total_s']:.2f} s "
                f"(gen {last['generation_s']:.2f}); TRL step {index}: "
                f"{trl.rows[-1]['total_s']:.2f} s (gen {trl.rows[-1]['generation_s']:.2f})",
                file=sys.stderr,
                flush=True,
            )

    trl.on_step = boxgym_step
    trl.run()
    report(box_rows, trl.rows[1:], args, length, (started, load()))


if __name__ == "__main__":
    main()
