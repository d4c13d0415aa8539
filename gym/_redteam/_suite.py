"""Running the suite: pick the rows, run them (in parallel where allowed), collect rows."""

from __future__ import annotations

import importlib
import queue
import random
import secrets
import threading
import time
from collections.abc import Callable, Iterable

from pydantic import BaseModel, Field

from gym._envs._registry import attack_modules
from gym._redteam._canary import Canaries
from gym._redteam._core import ATTACKS, Attack, Context, Finding, Row, load_module, plan

__all__ = ["BUILTIN", "Report", "load_builtin", "run_suite"]

SHARED = (
    "gym._redteam._containment",
    "gym._redteam._reward",
    "gym._redteam._false_positive",
)
"""boxgym's attacks on what every family shares (sandbox, export, flags), shown first."""
HARNESS = (
    "gym._redteam._faults",
    "gym._redteam._infra",
    "gym._redteam._provenance",
    "gym._redteam._sweep",
    "gym._redteam._fork",
    "gym._redteam._judge",
    "gym._redteam._user",
)
"""boxgym's faults of the harness, the grading channel's and the sweeps over tasks,
shown after the families' own attacks."""
BUILTIN = SHARED + HARNESS
"""The modules of boxgym's own attacks and faults."""


class Report(BaseModel):
    """What ``gym redteam --json`` prints: the rows and how they were made."""

    seed: int
    """The seed of the run's random names (rerun with it to repeat them)."""
    runtime: str
    """The OCI runtime the containers ran under (``runc`` unless told otherwise)."""
    rows: list[Row] = Field(default_factory=list)
    """One row per attack or fault and environment."""
    skipped: list[str] = Field(default_factory=list)
    """Rows not run: destructive faults without ``--destructive``, long rows without
    ``--long`` (each with what it needs)."""
    seconds: float = 0.0
    """Wall-clock seconds of the whole run."""

    @property
    def failed(self) -> list[Row]:
        """Rows that did not hold and are not known gaps."""
        return [r for r in self.rows if not r.held and not r.gap]

    @property
    def gaps(self) -> list[Row]:
        """Rows that did not hold and are known gaps."""
        return [r for r in self.rows if not r.held and r.gap]


def load_builtin() -> None:
    """Register boxgym's own attacks and faults and those of every registered family (once).

    In the order their rows are shown: `SHARED`, the attack module of each bundled
    family (what its manifest's ``attacks`` names, by env id), `HARNESS`, then those of
    every other family (a project's folder, a plugin package's ``gym.register(...,
    attacks=...)``). An attack's place in that order picks the environment it runs in for
    its kind (`gym._redteam._core.representatives`): a plugin's attacks come last, so that
    they move none of boxgym's rows.

    Raises:
        ConfigError: a family's attack module cannot be imported.
    """
    for module in SHARED:
        importlib.import_module(module)
    for module in attack_modules(bundled=True):
        load_module(module)
    for module in HARNESS:
        importlib.import_module(module)
    for module in attack_modules(bundled=False):
        load_module(module)


Planned = tuple[Attack, str, list[str]]
"""A row to run: the attack, its env id, the envs it covers."""


def _one(attack: Attack, env_id: str, covers: list[str], ctx: Context) -> Row:
    start = time.monotonic()
    try:
        finding = attack.run(ctx, env_id)
    except Exception as exc:  # noqa: BLE001 - a broken row is reported, never fatal
        finding = Finding(f"the suite itself failed: {type(exc).__name__}: {exc}"[:400], False)
    return Row(
        name=attack.name,
        kind=attack.kind,
        env=env_id,
        covers=covers,
        expected=attack.expected,
        observed=finding.observed,
        held=finding.held,
        gap=attack.gap,
        seconds=round(time.monotonic() - start, 1),
    )


def run_suite(
    *,
    names: Iterable[str] = (),
    families: Iterable[str] = (),
    kinds: Iterable[str] = ("attack", "fault"),
    fast: bool = False,
    destructive: bool = False,
    long: bool = False,
    seed: int | None = None,
    concurrency: int = 2,
    every_env: bool = True,
    runtime: str = "runc",
    env_kwargs: dict[str, object] | None = None,
    progress: Callable[[Row], None] | None = None,
    planned: Callable[[int], None] | None = None,
) -> Report:
    """Run the selected attacks and faults and return their rows.

    Args:
        names: only rows whose name starts with one of these.
        families: only these families (the kinds manifests declare: code, sql,
            support...; harness) or env ids.
        kinds: attack, fault or both.
        fast: only the quick subset.
        destructive: also run faults that disturb the shared engine (daemon restart).
        long: also run the rows that take tens of minutes (`Attack.long`).
        seed: the seed of the random names (a fresh one by default).
        concurrency: rows run at once (rows marked solo run alone, after the rest).
        every_env: each attack in every env it applies to; otherwise in one env per
            family, the row covering the others (what CI runs).
        runtime: the OCI runtime in use, for the report.
        env_kwargs: extra arguments for every environment made (weakening tests use it).
        progress: called with each row as it finishes.
        planned: called once, before the first row, with the number of rows to run.
    """
    load_builtin()
    seed = secrets.randbits(32) if seed is None else seed
    report = Report(seed=seed, runtime=runtime)
    rows_to_run = list(plan(names, families, fast=fast, kinds=kinds, every_env=every_env))
    pairs: list[Planned] = []
    for row in rows_to_run:
        flag = _flag_needed(row[0], destructive=destructive, long=long)
        if flag:
            report.skipped.append(f"{row[0].name} ({row[1]}): needs {flag}")
        else:
            pairs.append(row)
    if planned:
        planned(len(pairs))
    start = time.monotonic()
    with Canaries() as canaries:
        ctx = Context(
            rng=random.Random(seed),
            canaries=canaries,
            label=f"redteam-{seed:08x}",
            destructive=destructive,
            runtime=runtime,
            env_kwargs=dict(env_kwargs or {}),
            seed=seed,
            long=long,
        )
        order = {(a.name, e): i for i, (a, e, _) in enumerate(pairs)}
        try:
            rows = _run_pairs([p for p in pairs if not p[0].solo], ctx, concurrency, progress)
            rows += _run_pairs([p for p in pairs if p[0].solo], ctx, 1, progress)
        finally:
            ctx.close()
    report.rows = sorted(rows, key=lambda r: order[(r.name, r.env)])
    report.seconds = round(time.monotonic() - start, 1)
    return report


def _flag_needed(attack: Attack, *, destructive: bool, long: bool) -> str | None:
    """The option a row needs and was not given (None: it runs)."""
    if attack.destructive and not destructive:
        return "--destructive"
    if attack.long and not long:
        return "--long"
    return None


def _run_pairs(
    pairs: list[Planned],
    ctx: Context,
    concurrency: int,
    progress: Callable[[Row], None] | None,
) -> list[Row]:
    """Run rows, ``concurrency`` at once, in daemon threads.

    A stop (SIGINT, SIGTERM: an exception in this thread) leaves at once: no row starts
    after it, and the rows in flight are not waited for (a pool's threads would be, to
    the end of every row queued). Their containers leave with this process.
    """
    todo: queue.SimpleQueue[Planned] = queue.SimpleQueue()
    for planned in pairs:
        todo.put(planned)
    done: queue.SimpleQueue[Row | BaseException] = queue.SimpleQueue()

    def work() -> None:
        while True:
            try:
                planned = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put(_one(*planned, ctx))
            except BaseException as exc:  # noqa: BLE001 - raised again in the caller
                done.put(exc)

    for i in range(min(max(1, concurrency), len(pairs))):
        threading.Thread(target=work, name=f"redteam-{i}", daemon=True).start()
    rows: list[Row] = []
    for _ in pairs:
        item = done.get()
        if isinstance(item, BaseException):
            raise item
        rows.append(item)
        if progress:
            progress(item)
    return rows


def registered() -> dict[str, Attack]:
    """Every registered attack and fault (boxgym's and every family's included)."""
    load_builtin()
    return dict(ATTACKS)
