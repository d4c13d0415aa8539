"""Environment validation: every task is solvable, not free, and graded deterministically.

For each task: the oracle must pass every time; the noop policy must fail; a perturbed
oracle (one forbidden write) must be flagged; the oracle's final state, graded again
``repeats`` times, must give the same verdict each time; and every policy of the
task's *panel* (the environment's ``panel_calls``: generic cheating policies that do
none of the work, e.g. a liar object, a constant, the visible example echoed, an empty
answer; gym/_envs/_panel.py for code tasks) must end ``fail``.

A panel episode that ends ``infra_error`` is played once more; if it ends
``infra_error`` again the task is reported as not validated (an ``infra_error``
problem: not stored, so a rerun plays it again), never as valid. A task may exempt a
panel policy with a reason (``panel_exempt = {policy = "why"}`` in its data, e.g. a
task whose reference solution is itself a constant): that policy passing is then shown
as exempt, not as a problem.

At benchmark scale: tasks are chosen in natural id order (``limit``, ``split``, a
``shard`` of N), and each task's result is stored (`ValidationStore`, SQLite under the
data dir) under a fingerprint of the task's files, the code (boxgym's modules, the
family's folder, the image's build context) and the repeats, so a rerun skips what was
already validated and resumes where it stopped; any change of those validates the
task again. Results with an infrastructure error are never stored: they run again.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from gym._core._errors import ConfigError, GymError, InfraError, SandboxError, StoreError
from gym._core._models import Task, Verdict, hash_tree, natural_key
from gym._core._paths import data_dir
from gym._core._tools import ToolCall
from gym._envs._env import ContainerEnv, default_sandboxes, env_of
from gym._envs._registry import env_class, make, task_problems, tasks_of
from gym._grading import RUNNER_HASH
from gym._policy import NoopPolicy, OraclePolicy, PerturbedOraclePolicy, Policy, ScriptPolicy
from gym._run._rollout import EpisodeResult, run_episode
from gym._sandbox._images import context_hash

__all__ = [
    "TaskCheck",
    "ValidationStore",
    "panel_exemptions",
    "parse_shard",
    "planned_tasks",
    "select_tasks",
    "validate_env",
]


class TaskCheck(BaseModel):
    """Validation results of one task."""

    task_id: str
    env_id: str = ""
    """The environment."""
    oracle: list[str] = Field(default_factory=list)
    """Outcome of each oracle run."""
    noop: str = ""
    """Outcome of the noop run."""
    perturbed: str = ""
    """Flags of the perturbed oracle run (``-`` when the family has no perturbation)."""
    regrade_identical: bool | None = None
    """Whether re-grading the oracle's final state gave identical verdicts."""
    panel: dict[str, str] = Field(default_factory=dict)
    """Outcome of each panel policy (``fail`` as required; ``pass``: the task is invalid;
    ``infra_error``: twice, the task is not validated)."""
    exempt: dict[str, str] = Field(default_factory=dict)
    """Panel policies the task exempts, with why (a pass of one of them is no problem)."""
    problems: list[str] = Field(default_factory=list)
    """What is wrong with the task; empty when it is valid."""
    resumed: bool = False
    """Taken from the stored result of an earlier run (the task was not run again)."""
    duration_s: float = 0.0
    """Wall-clock seconds the checks of this task took."""

    @property
    def ok(self) -> bool:
        """Whether the task passed every check."""
        return not self.problems

    @property
    def infra(self) -> bool:
        """Whether the result is worth running again rather than keeping.

        An episode ended in an infrastructure error, or a regrade disagreed (a grading
        that timed out on a busy machine looks the same).
        """
        outcomes = [*self.oracle, self.noop, self.perturbed, *self.panel.values()]
        if "infra_error" in outcomes or self.regrade_identical is False:
            return True
        return any("infra_error" in p for p in self.problems)


def _verdict_key(verdict: Verdict | None) -> str:
    if verdict is None:
        return "none"
    data = verdict.model_dump(mode="json")
    return json.dumps(
        {k: data[k] for k in ("outcome", "reward", "components", "flags")}, sort_keys=True
    )


def _episode(env_id: str, policy: Policy, task_id: str, seed: int) -> EpisodeResult:
    env = make(env_id)
    return run_episode(env, policy, task_id=task_id, seed=seed)


def _regrade(env: ContainerEnv[Any], result: EpisodeResult, repeats: int) -> bool | None:
    if result.export is None or result.verdict is None:
        return None
    first = _verdict_key(result.verdict)
    for _ in range(repeats):
        again = env.regrade(result.task_id, result.export, result.steps)
        if _verdict_key(again) != first:
            return False
    return True


def validate_task(env_id: str, task_id: str, repeats: int) -> TaskCheck:
    """Run every validation check on one task."""
    check = TaskCheck(task_id=task_id, env_id=env_id)
    first: EpisodeResult | None = None
    for i in range(repeats):
        result = _episode(env_id, OraclePolicy(), task_id, seed=i)
        first = first or result
        check.oracle.append(result.outcome)
        if result.outcome != "pass":
            reason = result.verdict.reason if result.verdict else result.end_reason
            check.problems.append(f"oracle run {i + 1}: {result.outcome} ({reason[:300]})")
        elif result.verdict and result.verdict.flags:
            check.problems.append(
                f"oracle run {i + 1} raised flags: {[f.name for f in result.verdict.flags]}"
            )
    noop = _episode(env_id, NoopPolicy(), task_id, seed=0)
    check.noop = noop.outcome
    if noop.outcome != "fail":
        why = noop.verdict.reason if noop.verdict else noop.end_reason
        check.problems.append(f"noop: {noop.outcome}: {why[:300]} (it must fail)")
    env = env_of(make(env_id))
    if env.perturbed_calls(env.task_by_id(task_id)) is not None:
        pert = _episode(env_id, PerturbedOraclePolicy(), task_id, seed=0)
        flags = [f.name for f in pert.verdict.flags] if pert.verdict else []
        check.perturbed = ",".join(flags) or pert.outcome
        if not flags or pert.outcome != "fail":
            check.problems.append(
                f"perturbed oracle not flagged and failed: {pert.outcome} {flags}"
            )
    else:
        check.perturbed = "-"
    if first is not None and first.outcome == "pass":
        check.regrade_identical = _regrade(env, first, repeats)
        if check.regrade_identical is False:
            check.problems.append("re-grading the oracle's final state changed the verdict (flaky)")
    task = env.task_by_id(task_id)
    panel = env.panel_calls(task)
    env.close()
    _play_panel(check, env_id, task, panel)
    return check


def panel_exemptions(task: Task) -> dict[str, str]:
    """The panel policies a task exempts (``panel_exempt`` in its data), with why.

    Raises:
        ConfigError: not a table of policy names to non-empty reasons.
    """
    table = task.data.get("panel_exempt", {})
    if not isinstance(table, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in table.items()
    ):
        raise ConfigError(
            f"task {task.id}: panel_exempt must map panel policy names to the reason "
            'each may pass, e.g. panel_exempt = {echo = "the reference returns () for '
            'every input"}'
        )
    return dict(table)


def _play_panel(
    check: TaskCheck, env_id: str, task: Task, panel: dict[str, list[ToolCall]]
) -> None:
    """Play every panel policy; each must end ``fail`` (an infra_error is played again)."""
    exempt = panel_exemptions(task)
    check.exempt = {name: why for name, why in exempt.items() if name in panel}
    for name, calls in panel.items():
        result = _episode(env_id, ScriptPolicy(calls), task.id, seed=0)
        if result.outcome == "infra_error":  # once more: a transient fault of ours
            result = _episode(env_id, ScriptPolicy(calls), task.id, seed=0)
        check.panel[name] = result.outcome
        why = (result.verdict.reason if result.verdict else result.end_reason)[:300]
        if result.outcome == "infra_error":
            check.problems.append(
                f"panel {name}: infra_error twice ({why}): not validated, run it again; if "
                "it stays, the code under test may turn its fail into infra_error (a grader "
                "defect)"
            )
        elif result.outcome != "fail" and name not in exempt:
            check.problems.append(
                f"panel {name}: {result.outcome}, a policy that does none of the work must "
                "fail: strengthen the checks (docs/authoring.md, 'The panel')"
            )


class ValidationStore:
    """Per-task validation results, kept so that a rerun resumes (SQLite, thread-safe).

    Args:
        path: the database file (``<data dir>/validation.db`` by default).
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or data_dir() / "validation.db"
        self._lock = threading.Lock()
        try:
            with self._connect() as db:
                db.execute(
                    "create table if not exists checks (env_id text, task_id text, "
                    "fingerprint text, ok integer, result text, finished_at real, "
                    "primary key (env_id, task_id, fingerprint))"
                )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the validation results {self.path}: {exc}") from exc

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=60)

    def get(self, env_id: str, task_id: str, fingerprint: str) -> TaskCheck | None:
        """The stored result of this task under this fingerprint, if any."""
        with self._lock, self._connect() as db:
            row = db.execute(
                "select result from checks where env_id=? and task_id=? and fingerprint=?",
                (env_id, task_id, fingerprint),
            ).fetchone()
        return TaskCheck.model_validate_json(row[0]) if row else None

    def put(self, check: TaskCheck, fingerprint: str) -> None:
        """Keep a result (replacing an older one of the same fingerprint)."""
        with self._lock, self._connect() as db:
            db.execute(
                "insert or replace into checks values (?, ?, ?, ?, ?, ?)",
                (
                    check.env_id,
                    check.task_id,
                    fingerprint,
                    int(check.ok),
                    check.model_dump_json(),
                    time.time(),
                ),
            )


@functools.lru_cache(maxsize=64)
def code_hash(env_id: str) -> str:
    """A hash of the code a validation result depends on beyond the task itself.

    boxgym's own modules, the folders of the family's classes (a subclass of a bundled
    family includes that family's) and the image's build context.
    """
    cls = env_class(env_id)
    h = hashlib.sha256(RUNNER_HASH.encode())
    folders = {Path(__file__).parents[1]}  # gym/
    families = [c for c in cls.__mro__ if isinstance(c, type) and issubclass(c, ContainerEnv)]
    folders |= {Path(inspect.getfile(c)).parent for c in families}
    for root in sorted(folders):
        for file in sorted(root.rglob("*.py")):
            h.update(file.relative_to(root).as_posix().encode() + b"\0" + file.read_bytes())
    h.update(context_hash(cls.image).encode() if cls.image else b"")
    return h.hexdigest()


def fingerprint(task: Task, repeats: int, code: str = "") -> str:
    """What a stored result depends on: the task (its files), the code, the repeats."""
    h = hashlib.sha256(task.model_dump_json().encode())
    h.update(hash_tree(Path(task.path)).encode() if task.path else b"")
    h.update(f"{RUNNER_HASH}:{code}:{repeats}".encode())
    return h.hexdigest()


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` -> (I, N), 1 <= I <= N.

    Raises:
        ConfigError: not of that form.
    """
    left, _, right = text.partition("/")
    if not (left.isdigit() and right.isdigit() and 1 <= int(left) <= int(right)):
        raise ConfigError(f"--shard {text!r} must be I/N with 1 <= I <= N, e.g. 2/4")
    return int(left), int(right)


def select_tasks(
    tasks: list[Task],
    *,
    ids: list[str] | None = None,
    split: str | None = None,
    limit: int | None = None,
    shard: tuple[int, int] | None = None,
) -> list[Task]:
    """Tasks to validate, in natural id order.

    By id and split, then the first ``limit``, then every N-th from the I-th
    (``shard`` = (I, N)), so that shards split any selection evenly.

    Raises:
        ConfigError: an id asked for does not exist.
    """
    if ids:
        unknown = sorted(set(ids) - {t.id for t in tasks}, key=natural_key)
        if unknown:
            raise ConfigError(f"no tasks {unknown} (ids look like {tasks[0].id if tasks else '-'})")
    chosen = [t for t in tasks if (not ids or t.id in ids) and (split is None or t.split == split)]
    chosen = sorted(chosen, key=lambda t: natural_key(t.id))[:limit]
    if shard is not None:
        i, n = shard
        chosen = chosen[i - 1 :: n]
    return chosen


def _bad_tasks(env_id: str) -> list[TaskCheck]:
    """Tasks left out when the environment loaded them, as failed checks."""
    return [
        TaskCheck(task_id=p.split(":", 1)[0], env_id=env_id, problems=[p])
        for p in task_problems(env_id)
    ]


def validate_env(
    env_id: str,
    *,
    repeats: int = 3,
    tasks: list[str] | None = None,
    concurrency: int = 1,
    progress: Callable[[TaskCheck], None] | None = None,
    split: str | None = None,
    limit: int | None = None,
    shard: tuple[int, int] | None = None,
    store: ValidationStore | None = None,
    resume: bool = True,
) -> list[TaskCheck]:
    """Validate the tasks of an environment (all, or a selection), tasks in parallel.

    Args:
        env_id: the environment.
        repeats: oracle runs and re-grades per task.
        tasks: only these task ids.
        concurrency: tasks validated at once.
        progress: called with each task's result as it finishes (in finishing order).
        split: only tasks of this split.
        limit: only the first N tasks (natural id order), before sharding.
        shard: (I, N): only the I-th of N even shares of the selection.
        store: where results are kept (and read back to resume); None keeps nothing.
        resume: take a task's stored result instead of validating it again (when its
            task files, the grading runner and ``repeats`` are unchanged).

    Returns:
        One result per task, in natural id order; with no task selection, tasks that
        could not even be loaded come first, as invalid.
    """
    chosen, bad = _selection(env_id, tasks, split, limit, shard)
    for check in bad:
        if progress:
            progress(check)
    default_sandboxes().resize(max(1, concurrency))
    out: dict[str, TaskCheck] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
    try:
        futures = [
            pool.submit(_validate_kept, env_id, task, repeats, store, resume) for task in chosen
        ]
        for future in as_completed(futures):
            check = future.result()
            out[check.task_id] = check
            if progress:
                progress(check)
    except BaseException:  # Ctrl-C, SIGTERM: drop the queued tasks, finish no more
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return [*bad, *(out[t.id] for t in chosen)]


def planned_tasks(
    env_id: str,
    *,
    tasks: list[str] | None = None,
    split: str | None = None,
    limit: int | None = None,
    shard: tuple[int, int] | None = None,
) -> int:
    """How many results `validate_env` gives with these arguments (a progress's plan)."""
    chosen, bad = _selection(env_id, tasks, split, limit, shard)
    return len(chosen) + len(bad)


def _selection(
    env_id: str,
    tasks: list[str] | None,
    split: str | None,
    limit: int | None,
    shard: tuple[int, int] | None,
) -> tuple[list[Task], list[TaskCheck]]:
    """The tasks to validate; with no selection, also those that could not be loaded."""
    chosen = select_tasks(tasks_of(env_id), ids=tasks, split=split, limit=limit, shard=shard)
    whole = not tasks and split is None and limit is None and shard is None
    return chosen, _bad_tasks(env_id) if whole else []


def _validate_kept(
    env_id: str, task: Task, repeats: int, store: ValidationStore | None, resume: bool
) -> TaskCheck:
    """One task's result: the stored one when its fingerprint matches, else run and kept."""
    key = fingerprint(task, repeats, code_hash(env_id)) if store else ""
    if store is not None and resume:
        kept = store.get(env_id, task.id, key)
        if kept is not None:
            return kept.model_copy(update={"resumed": True})
    start = time.monotonic()
    try:
        check = validate_task(env_id, task.id, repeats)
    except GymError as exc:  # one task's failure must not end the whole run
        infra = "infra_error: " if isinstance(exc, SandboxError | InfraError) else ""
        why = f"{infra}validation stopped: {type(exc).__name__}: {str(exc)[:300]}"
        check = TaskCheck(task_id=task.id, env_id=env_id, problems=[why])
    check.duration_s = round(time.monotonic() - start, 3)
    if store is not None and not check.infra:
        store.put(check, key)
    return check
