"""`gym train rft`: rejection-sampling fine-tuning of a local model (see gym.train._rft)."""

from __future__ import annotations

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
from gym._cli._tables import number, print_table, text

__all__: list[str] = []


def _params(model: str | None, max_new_tokens: int | None) -> dict[str, Any]:
    params = {"model": model, "max_new_tokens": max_new_tokens}
    return {k: v for k, v in params.items() if v is not None}


def _table(result: Any) -> Table:
    names = ("round", "episodes", "verified", "kept", "pass@1 before", "after")
    table = Table(
        *(number(name) for name in names),
        text("promoted"),
        title=f"rft {result.rft_id}: held-out pass@1 {result.baseline_pass_at_1:.3f}",
    )
    for r in result.rounds:
        after = "-" if r.pass_at_1_after is None else f"{r.pass_at_1_after:.3f}"
        table.add_row(
            str(r.round),
            str(r.episodes),
            str(r.verified),
            str(r.kept),
            f"{r.pass_at_1_before:.3f}",
            after,
            Text(r.checkpoint) if r.promoted else "no",
        )
    return table


def _line(line: str) -> None:
    err.print(line, markup=False, highlight=False)


@train_app.command("rft")
def rft(
    ctx: typer.Context,
    envs: Annotated[list[str], typer.Argument(help="Environment ids or suites.")],
    policy: Annotated[
        str, typer.Option("--policy", "-p", callback=one_of("local", "tiny"), help="local or tiny.")
    ] = "local",
    model: Annotated[
        str | None, typer.Option("--model", help="Model name, folder or .gguf file.")
    ] = None,
    rounds: Annotated[int, typer.Option("--rounds", min=1, help="Rounds to run.")] = 1,
    k: Annotated[int, typer.Option("-k", min=1, help="Episodes per train task per round.")] = 4,
    cap: Annotated[int, typer.Option("--cap", min=1, help="Kept episodes per task, at most.")] = 2,
    temperature: Annotated[
        float, typer.Option("--temperature", help="Sampling temperature while collecting.")
    ] = 1.0,
    eval_k: Annotated[int, typer.Option("--eval-k", min=1, help="Episodes per eval task.")] = 1,
    eval_temperature: Annotated[
        float,
        typer.Option("--eval-temperature", min=0.0, help="Evaluation temperature (0: greedy)."),
    ] = 0.0,
    lr: Annotated[float, typer.Option("--lr", help="AdamW learning rate.")] = 1e-5,
    epochs: Annotated[
        int, typer.Option("--epochs", min=1, help="Passes over the kept samples.")
    ] = 2,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Samples per step.")] = 4,
    max_new_tokens: Annotated[
        int | None, typer.Option("--max-new-tokens", min=1, help="Tokens per turn, at most.")
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", min=0, max=2**63 - 1, help="Model, sampling and episode seed.")
    ] = 0,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="At most N tasks per env and split.")
    ] = None,
    tasks: Annotated[list[str] | None, tasks_option("Only these train task ids")] = None,
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", min=1, help="Step budget override.")
    ] = None,
    out: Annotated[
        str, typer.Option("--out", help="Folder for promoted checkpoints (round-N).")
    ] = "rft-checkpoints",
    db: DbOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Rejection-sampling fine-tuning: keep verified episodes, learn them, keep what helps.

    Each round runs K episodes per train task, keeps the verified unflagged ones
    (distinct, at most --cap per task), fine-tunes on them and evaluates on the eval
    split; the model is promoted (saved under --out) only if held-out pass@1 rises.
    """
    from gym._core._progress import RunEvents
    from gym._store import Store
    from gym.train._rft import RFTConfig, rft_envs, train_rft

    config = from_options(
        ctx,
        lambda: RFTConfig(
            envs=envs,
            policy=policy,
            policy_params=_params(model, max_new_tokens),
            rounds=rounds,
            k=k,
            cap=cap,
            temperature=temperature,
            eval_k=eval_k,
            eval_temperature=eval_temperature,
            lr=lr,
            epochs=epochs,
            batch_size=batch_size,
            seed=seed,
            limit=limit,
            tasks=tasks,
            max_steps=max_steps,
        ),
    )
    rft_envs(config)  # an unknown env or a held-out task: refused before anything is said
    store = Store(db)
    err.print(f"rft [bold]{config.rft_id}[/] -> {escape(store._safe_url())}")
    with RunEvents("rft", named=True, console=err) as shown:
        result = train_rft(config, store=store, out=out, progress=_line, events=shown)
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        print_table(_table(result), console)
