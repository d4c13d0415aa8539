"""`gym train grpo`: train a policy on environment rewards (sampled here or by a server)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gym._cli._app import (
    DbOpt,
    JsonFlag,
    console,
    err,
    from_options,
    one_of,
    print_json,
    tasks_option,
    train_app,
)
from gym._cli._runs import plot_path
from gym._cli._tables import number, print_table, text
from gym._core._errors import ConfigError

__all__: list[str] = []


@train_app.command("grpo")
def grpo_cmd(
    ctx: typer.Context,
    envs: Annotated[list[str], typer.Argument(help="Environment ids (train-split tasks).")],
    policy: Annotated[
        str,
        typer.Option(
            "--policy",
            "-p",
            callback=one_of("tiny", "local", "openai"),
            help="tiny, local, or openai (a vLLM server samples; needs --base-url).",
        ),
    ] = "tiny",
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="tiny: 'tiny' or a checkpoint folder; local: a model; openai: the served name.",
        ),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="openai: the server's API root (…/v1).")
    ] = None,
    sync: Annotated[
        str,
        typer.Option(
            "--sync",
            callback=one_of("lora", "full", "none"),
            help="openai: how new weights reach the server (lora, full or none).",
        ),
    ] = "lora",
    weights: Annotated[
        str | None,
        typer.Option(
            "--weights", help="openai: the trainer's copy of the served model (default: --model)."
        ),
    ] = None,
    lora_rank: Annotated[int, typer.Option("--lora-rank", min=1, help="LoRA rank r.")] = 8,
    adapter_dir: Annotated[
        str | None,
        typer.Option("--adapter-dir", help="lora: where adapters are written (server-readable)."),
    ] = None,
    server_adapter_dir: Annotated[
        str | None,
        typer.Option("--server-adapter-dir", help="lora: that folder as the server sees it."),
    ] = None,
    max_staleness: Annotated[
        int,
        typer.Option(
            "--max-staleness", min=0, help="Leave out episodes more than N versions old (0)."
        ),
    ] = 0,
    sampling: Annotated[
        str,
        typer.Option(
            "--sampling",
            callback=one_of("trajectory", "step"),
            help="trajectory (whole episodes) or step (fork K branches at chosen turns).",
        ),
    ] = "trajectory",
    branch_steps: Annotated[
        str | None,
        typer.Option(
            "--branch-steps", help="step: the turns to fork before, 'auto' (each) or 1,2."
        ),
    ] = None,
    branches: Annotated[
        int | None, typer.Option("--branches", "-K", min=2, help="step: branches per fork (4).")
    ] = None,
    per_parent: Annotated[
        int | None,
        typer.Option(
            "--branches-per-parent",
            min=2,
            help="step: exactly this many branches per parent (a multiple of K): as many "
            "episodes each step whatever the parents' lengths.",
        ),
    ] = None,
    credit: Annotated[
        str | None,
        typer.Option(
            "--credit",
            callback=one_of("tree", "branch"),
            help="step: what trains: tree (every parent turn and each branch's own turns, "
            "credited from the states around them) or branch (the branching turns alone).",
        ),
    ] = None,
    step_judge: Annotated[
        bool,
        typer.Option(
            "--step-judge",
            help="step: the LLM judge scores each branching step (GYM_JUDGE_BASE_URL, "
            "GYM_JUDGE_MODEL), a dense reward beside the outcome.",
        ),
    ] = False,
    step_reward_weight: Annotated[
        float,
        typer.Option("--step-reward-weight", min=0, help="step: weight of the judge's reward."),
    ] = 0.5,
    max_step_gap: Annotated[
        float,
        typer.Option(
            "--max-step-gap", help="Watch: widening of the judge's step reward - hidden pass rate."
        ),
    ] = 0.3,
    seed: Annotated[
        int, typer.Option("--seed", min=0, max=2**63 - 1, help="Model, sampling and episode seed.")
    ] = 0,
    steps: Annotated[int, typer.Option("--steps", min=1, help="Training steps.")] = 10,
    group_size: Annotated[
        int,
        typer.Option(
            "--group-size", "-G", min=1, help="Episodes per task (at least 2); step: parents."
        ),
    ] = 8,
    tasks: Annotated[list[str] | None, tasks_option("Only these train-split task ids")] = None,
    lr: Annotated[float, typer.Option("--lr", help="Adam learning rate.")] = 3e-3,
    updates: Annotated[
        int, typer.Option("--updates-per-step", min=1, help="Optimizer steps per batch (mu).")
    ] = 4,
    temperature: Annotated[
        float, typer.Option("--temperature", help="Sampling temperature (above 0).")
    ] = 1.0,
    max_new_tokens: Annotated[
        int, typer.Option("--max-new-tokens", min=1, help="Tokens per turn, at most.")
    ] = 96,
    advantage: Annotated[str, typer.Option("--advantage", help="grpo, dr_grpo or rloo.")] = "grpo",
    aggregation: Annotated[
        str,
        typer.Option("--aggregation", help="token_mean, seq_mean_token_mean or seq_sum_const."),
    ] = "token_mean",
    beta: Annotated[float, typer.Option("--beta", help="KL weight to the initial model.")] = 0.0,
    reward: Annotated[
        str, typer.Option("--reward", help="visible (hidden checks monitored) or verdict.")
    ] = "visible",
    max_gap: Annotated[
        float, typer.Option("--max-gap", help="Watch: widening of reward - hidden pass rate.")
    ] = 0.3,
    max_flag_rise: Annotated[
        float, typer.Option("--max-flag-rise", help="Watch: rise of a flag's rate.")
    ] = 0.3,
    patience: Annotated[int, typer.Option("--patience", min=1, help="Watch: steps in a row.")] = 2,
    no_watch: Annotated[
        bool, typer.Option("--no-watch", help="Record the watch's numbers, never stop.")
    ] = False,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Episodes at once.")
    ] = 4,
    out: Annotated[
        Path | None, typer.Option("--out", help="Checkpoint folder (default under trajectories/).")
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            callback=plot_path,
            help="Draw reward and flag rates per step: F.png, F.svg or F.pdf.",
        ),
    ] = None,
    db: DbOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """GRPO: G episodes per task per step; the weights are updated in this process.

    With --policy openai a vLLM server samples and each new version reaches it (--sync).
    Exits 2 when the reward-hacking watch stopped the run (the JSON says why).
    """
    from gym._core._progress import progress
    from gym._store import Store
    from gym.train._grpo import GrpoConfig, train_grpo
    from gym.train._grpo_watch import WatchConfig
    from gym.train._loss import LossConfig

    if group_size < 2 and sampling != "step":
        raise typer.BadParameter(
            "a group needs at least two episodes per task (one parent is enough with "
            "--sampling step)",
            param_hint="'--group-size'",
        )
    if (policy == "openai") != (base_url is not None):
        raise ConfigError("--base-url goes with --policy openai, and --policy openai needs it")
    if policy == "openai" and model is None:
        raise ConfigError("--policy openai needs --model: the name the server serves")
    server = None
    if base_url is not None:
        server = {
            "base_url": base_url,
            "sync": sync,
            "weights": weights or "",
            "lora": {"rank": lora_rank, "alpha": 2 * lora_rank},
            "adapter_dir": adapter_dir or "",
            "server_adapter_dir": server_adapter_dir or "",
        }
    config = from_options(
        ctx,
        lambda: GrpoConfig.model_validate(
            {
                "step_sampling": _step_sampling(
                    sampling,
                    branch_steps,
                    branches,
                    per_parent,
                    step_judge,
                    step_reward_weight,
                    credit,
                ),
                "envs": envs,
                "policy": policy,
                "server": server,
                "max_staleness": max_staleness,
                "model": model or ("tiny" if policy == "tiny" else "smollm2-135m"),
                "seed": seed,
                "steps": steps,
                "group_size": group_size,
                "tasks": tasks or None,
                "lr": lr,
                "updates_per_step": updates,
                "temperature": temperature,
                "max_new_tokens": max_new_tokens,
                "advantage": advantage,
                "loss": LossConfig.model_validate({"aggregation": aggregation, "beta": beta}),
                "reward": reward,
                "watch": WatchConfig(
                    enabled=not no_watch,
                    max_gap=max_gap,
                    max_flag_rise=max_flag_rise,
                    max_step_gap=max_step_gap,
                    patience=patience,
                ),
            }
        ),
    )
    if policy == "tiny" and model not in (None, "tiny") and not Path(model).expanduser().is_dir():
        raise ConfigError(
            f"--policy tiny trains --model tiny or a checkpoint folder of it (a --out), "
            f"not {model!r}"
        )
    store = Store(db)
    where = f"train {config.train_id} -> {escape(store._safe_url())}"
    with progress("grpo", unit="steps", console=err) as bar:

        def planned(total: int, done: int) -> None:  # said once the model loaded
            err.print(where)
            bar.plan(total, done)

        result = train_grpo(
            config,
            store=store,
            out=out,
            concurrency=concurrency,
            progress=lambda row: _progress_line(bar, row),
            planned=planned,
        )
    if plot is not None:
        _plot(result, plot)
    if as_json:
        print_json(result.summary())
    else:
        _table(result)
    if result.stopped:
        err.print(f"[red]stopped[/]: {escape(result.stopped)}")
        raise typer.Exit(2)


def _step_sampling(
    sampling: str,
    branch_steps: str | None,
    branches: int | None,
    per_parent: int | None = None,
    step_judge: bool = False,
    weight: float = 0.5,
    credit: str | None = None,
) -> dict[str, Any] | None:
    """The step-sampling settings of ``--sampling step`` (None for trajectory sampling).

    Raises:
        ConfigError: a step option without ``--sampling step``, or ``--step-judge`` with
            no judge configured.
    """
    from gym.train._steps import parse_branch_steps

    if sampling == "trajectory":
        if branch_steps is not None or branches is not None or per_parent or step_judge or credit:
            raise ConfigError(
                "--branch-steps, --branches, --branches-per-parent, --credit and --step-judge "
                "go with --sampling step"
            )
        return None
    settings: dict[str, Any] = {
        "branch_steps": parse_branch_steps(branch_steps or "auto"),
        "branches": 4 if branches is None else branches,
    }
    if per_parent is not None:
        settings["branches_per_parent"] = per_parent
    if credit is not None:
        settings["credit"] = credit
    if step_judge:
        settings |= {"step_reward": _judge_step_reward(), "step_reward_weight": weight}
    return settings


def _judge_step_reward() -> Any:
    """The LLM judge's step reward, from GYM_JUDGE_BASE_URL and GYM_JUDGE_MODEL.

    Raises:
        ConfigError: the judge is not configured.
    """
    from gym._grading._judge import Judge
    from gym.train._rewards import judge_step_reward

    judge = Judge.from_env()
    if judge is None:
        raise ConfigError(
            "--step-judge needs a judge: set GYM_JUDGE_BASE_URL and GYM_JUDGE_MODEL "
            "(docs/graders/judge.md)"
        )
    return judge_step_reward(judge)


def _progress_line(bar: Any, row: Any) -> None:
    """A step in the progress, and its figures on a line of their own (never markup)."""
    flags = ", ".join(f"{k} {v:.0%}" for k, v in row.flag_rates.items()) or "no flags"
    bar.note(
        f"step {row.step}: reward {row.mean_reward:.3f}  hidden {row.hidden_pass_rate:.3f}  "
        f"{flags}  zero-var {row.zero_variance_fraction:.2f}  "
        f"{row.collect_s:.0f}s + {row.update_s:.1f}s"
    )
    bar.advance()


def _plot(result: Any, path: Path) -> None:
    from gym._reports._plot import TrainingPoint, save, training_figure

    points = [
        TrainingPoint(
            step=r.step,
            mean_reward=r.mean_reward,
            pass_rate=r.hidden_pass_rate,
            flag_rates=r.flag_rates,
            episodes=r.episodes - r.infra_errors,
        )
        for r in result.steps
    ]
    size = save(training_figure(points, title=f"train {result.train_id}"), path)
    err.print(f"wrote {escape(str(path))} ({size} bytes)")


def _table(result: Any) -> None:
    table = Table(
        number("step"),
        number("reward"),
        number("hidden pass"),
        text("flags"),
        number("zero-var"),
        number("update KL"),
        number("tok/s"),
    )
    for r in result.steps:
        flags = ", ".join(f"{k} {v:.0%}" for k, v in r.flag_rates.items()) or "-"
        table.add_row(
            str(r.step),
            f"{r.mean_reward:.3f}",
            f"{r.hidden_pass_rate:.3f}",
            Text(flags),
            f"{r.zero_variance_fraction:.2f}",
            f"{r.update_kl:.4f}",
            f"{r.tokens_per_s:.0f}",
        )
    print_table(table, console)
    console.print(f"train {result.train_id}; checkpoint {result.checkpoint or '-'}", markup=False)
