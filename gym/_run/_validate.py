"""Environment validation: every task is solvable, not free, and graded deterministically.

For each task: the oracle must pass every time; the noop policy must fail; a perturbed
oracle (one forbidden write) must be flagged; the oracle's final state, graded again
``repeats`` times, must give the same verdict each time; and every policy of the
task's *panel* (the environment's ``panel_calls``: generic cheating policies that do
none of the work, e.g. a liar object, a constant, the visible example echoed, an empty
answer; gym/_envs/_panel.py for code tasks) must end ``fail``.

A panel policy that plays what noop plays (a bare submit) takes noop's outcome; one whose
final state follows from its calls alone (`ContainerEnv.scripted_state`: a code task's
file writes) is graded as that state in a fresh grading container, as `regrade` grades
a stored one, with no agent container; any other is played as an episode.
A panel policy that ends ``infra_error`` is graded or played once more; if it ends
``infra_error`` again the task is reported as not validated (an ``infra_error``
problem: not stored, so a rerun plays it again), never as valid. A task may exempt a
panel policy with a reason (``panel_exempt = {policy = "why"}`` in its data, e.g. a
task whose reference solution is itself a constant): that policy passing is then shown
as exempt, not as a problem.

Tasks run on an executor (`gym._run._executor`, the one a run's episodes run on; threads
of this process by default): one job is one task, its checks played one after another
(`TaskWork`). At benchmark scale: tasks are chosen in natural id order (``limit``,
``split``, a ``shard`` of N), and each task's result is kept in the run store (its
``validations`` table, `ValidationRow`) under a fingerprint of the task's files, the
code (boxgym's modules, the family's folder, the image's build context) and the
repeats, so a rerun skips what was already validated and resumes where it stopped; any
change of those validates the task again. Results with an infrastructure error are
never kept: they run again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import json
import time
import uuid
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium
from pydantic import BaseModel, Field

from gym._core._errors import ConfigError, GymError, InfraError, SandboxError
from gym._core._models import Outcome, Task, Verdict, hash_tree, natural_key
from gym._core._phase import watch as watch_phases
from gym._core._tools import ToolCall
from gym._envs._env import ContainerEnv, env_of
from gym._envs._registry import env_class, make, task_problems, tasks_of
from gym._grading import RUNNER_HASH
from gym._policy import NoopPolicy, OraclePolicy, PerturbedOraclePolicy, Policy, ScriptPolicy
from gym._run._executor import EpisodeWork, Executor, Finished, Job, LocalExecutor
from gym._run._rollout import EpisodeResult, run_episode
from gym._sandbox import SandboxProvider
from gym._sandbox._images import context_hash
from gym._store import Store, ValidationRow

__all__ = [
    "TaskCheck",
    "TaskResult",
    "TaskWork",
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


def _make(
    env_id: str, sandboxes: SandboxProvider | None, task: Task | None = None
) -> gymnasium.Env[Any, Any]:
    """The environment for one check.

    With ``task``, made for it alone (as a run makes one): the env's other tasks are not
    loaded again for every episode.
    """
    kwargs: dict[str, Any] = {} if task is None else {"tasks": [task]}
    if sandboxes is not None:
        kwargs["sandboxes"] = sandboxes
    return make(env_id, **kwargs)


def _episode(
    env_id: str,
    policy: Policy,
    task_id: str,
    seed: int,
    sandboxes: SandboxProvider | None,
    task: Task | None = None,
) -> EpisodeResult:
    return run_episode(_make(env_id, sandboxes, task), policy, task_id=task_id, seed=seed)


def _regrade(env: ContainerEnv[Any], result: EpisodeResult, repeats: int) -> bool | None:
    if result.export is None or result.verdict is None:
        return None
    first = _verdict_key(result.verdict)
    for _ in range(repeats):
        again = env.regrade(result.task_id, result.export, result.steps)
        if _verdict_key(again) != first:
            return False
    return True


def validate_task(
    env_id: str,
    task_id: str,
    repeats: int,
    *,
    sandboxes: SandboxProvider | None = None,
    task: Task | None = None,
) -> TaskCheck:
    """Run every validation check on one task (its episodes on ``sandboxes``, or the default).

    ``task``: the task itself, when the caller has it loaded (each check's environment is
    then made for it alone); None: each environment loads the env's tasks.
    """
    check = TaskCheck(task_id=task_id, env_id=env_id)
    first: EpisodeResult | None = None
    for i in range(repeats):
        result = _episode(env_id, OraclePolicy(), task_id, i, sandboxes, task)
        first = first or result
        check.oracle.append(result.outcome)
        if result.outcome != "pass":
            reason = result.verdict.reason if result.verdict else result.end_reason
            check.problems.append(f"oracle run {i + 1}: {result.outcome} ({reason[:300]})")
        elif result.verdict and result.verdict.flags:
            check.problems.append(
                f"oracle run {i + 1} raised flags: {[f.name for f in result.verdict.flags]}"
            )
    noop = _episode(env_id, NoopPolicy(), task_id, 0, sandboxes, task)
    check.noop = noop.outcome
    if noop.outcome != "fail":
        why = noop.verdict.reason if noop.verdict else noop.end_reason
        check.problems.append(f"noop: {noop.outcome}: {why[:300]} (it must fail)")
    env = env_of(_make(env_id, sandboxes, task))
    if env.perturbed_calls(env.task_by_id(task_id)) is not None:
        pert = _episode(env_id, PerturbedOraclePolicy(), task_id, 0, sandboxes, task)
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
    try:
        _play_panel(check, env_id, env, env.task_by_id(task_id), noop, sandboxes)
    finally:
        env.close()
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
    check: TaskCheck,
    env_id: str,
    env: ContainerEnv[Any],
    task: Task,
    noop: EpisodeResult,
    sandboxes: SandboxProvider | None,
) -> None:
    """Grade or play every panel policy; each must end ``fail`` (an infra_error: once more)."""
    panel = env.panel_calls(task)
    exempt = panel_exemptions(task)
    check.exempt = {name: why for name, why in exempt.items() if name in panel}
    untouched = _untouched(env, noop)
    for name, calls in panel.items():
        outcome, why = _panel_outcome(env_id, env, task, calls, noop, untouched, sandboxes)
        if outcome == "infra_error":  # once more, nothing of noop's reused: a fault of ours
            outcome, why = _panel_outcome(env_id, env, task, calls, None, None, sandboxes)
        check.panel[name] = outcome
        if outcome == "infra_error":
            check.problems.append(
                f"panel {name}: infra_error twice ({why}): not validated, run it again; if "
                "it stays, the code under test may turn its fail into infra_error (a grader "
                "defect)"
            )
        elif outcome != "fail" and name not in exempt:
            check.problems.append(
                f"panel {name}: {outcome}, a policy that does none of the work must "
                "fail: strengthen the checks (docs/authoring.md, 'The panel')"
            )


def _panel_outcome(
    env_id: str,
    env: ContainerEnv[Any],
    task: Task,
    calls: list[ToolCall],
    noop: EpisodeResult | None,
    untouched: BaseModel | None,
    sandboxes: SandboxProvider | None,
) -> tuple[str, str]:
    """One panel policy's outcome and why (its first 300 characters).

    A policy that plays what noop plays (a bare submit) has noop's outcome; one whose
    final state follows from its calls (`ContainerEnv.scripted_state`, e.g. a code
    task's writes) is graded as that state, with no agent container; any other is
    played.
    """
    bare = [ToolCall(name="submit", arguments={})]
    if noop is not None and [c.model_copy(update={"id": None}) for c in calls] == bare:
        result = noop
    elif (state := env.scripted_state(task, calls, untouched)) is not None:
        verdict = env.regrade(task.id, state)
        return verdict.outcome, verdict.reason[:300]
    else:
        result = _episode(env_id, ScriptPolicy(calls), task.id, 0, sandboxes, task)
    why = result.verdict.reason if result.verdict else result.end_reason
    return result.outcome, why[:300]


def _untouched(env: ContainerEnv[Any], noop: EpisodeResult | None) -> BaseModel | None:
    """Noop's final state, when it ended graded (the state of a task nobody touched)."""
    if noop is None or noop.export is None or noop.outcome == "infra_error":
        return None
    return env.final_state_type.model_validate(noop.export)


class ValidationStore(Store):
    """Deprecated: validation results live in the run store; pass a `Store`.

    Args:
        path: a SQLite file to keep them in; None: the run store (``GYM_DB_URL`` or
            trajectories/runs.db). The old ``<data dir>/validation.db`` is not read.
    """

    def __init__(self, path: Path | None = None) -> None:
        warnings.warn(
            "ValidationStore is deprecated: validation results are kept in the run store; "
            "pass store=gym._store.Store(url) (the old validation.db is not read: its tasks "
            "are validated again once)",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(f"sqlite:///{path}" if path is not None else None)


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
    if cls.declared_in is not None:  # its boxgym.toml, prompt and tool files
        for file in sorted(p for p in cls.declared_in.iterdir() if p.is_file()):
            h.update(file.name.encode() + b"\0" + file.read_bytes())
    h.update(context_hash(cls.image).encode() if cls.image else b"")
    return h.hexdigest()


def _input_digest(path: Path) -> bytes:
    """A folder by its tree, a file by its bytes, anything else as absent.

    A file is read once per size and time: every task of a family names the same inputs.
    """
    if path.is_dir():
        return hash_tree(path).encode()
    try:
        st = path.stat()
    except OSError:
        return b"-"
    return _file_digest(str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _file_digest(path: str, mtime_ns: int, size: int) -> bytes:
    return hashlib.sha256(Path(path).read_bytes()).digest()


def fingerprint(task: Task, repeats: int, code: str = "", inputs: Iterable[Path] = ()) -> str:
    """What a stored result depends on: the task (its files), the code, the repeats.

    ``inputs`` are the files outside the task's folder that its grading reads (its
    family's `task_inputs`: a shared database dump, a backend's modules); each is hashed
    by name and content.
    """
    h = hashlib.sha256(task.model_dump_json().encode())
    h.update(hash_tree(Path(task.path)).encode() if task.path else b"")
    for path in sorted(inputs):
        h.update(path.name.encode() + b"\0" + _input_digest(path))
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
    store: Store | None = None,
    resume: bool = True,
    executor: Executor | None = None,
) -> list[TaskCheck]:
    """Validate the tasks of an environment (all, or a selection), tasks in parallel.

    Args:
        env_id: the environment.
        repeats: oracle runs and re-grades per task.
        tasks: only these task ids.
        concurrency: tasks validated at once (by the default executor).
        progress: called with each task's result as it finishes: the kept ones first,
            then the others in finishing order.
        split: only tasks of this split.
        limit: only the first N tasks (natural id order), before sharding.
        shard: (I, N): only the I-th of N even shares of the selection.
        store: the run store that keeps results (and gives them back to resume); None
            keeps nothing.
        resume: take a task's kept result instead of validating it again (when its
            task files, the code and ``repeats`` are unchanged).
        executor: where the tasks run, one job per task; by default threads of this
            process, ``concurrency`` at once. A stopped executor's unfinished tasks are
            left out of the results (a rerun validates them).

    Returns:
        One result per task, in natural id order; with no task selection, tasks that
        could not even be loaded come first, as invalid.
    """
    chosen, bad = _selection(env_id, tasks, split, limit, shard)
    for check in bad:
        if progress:
            progress(check)
    kept = _Kept(env_id, repeats, store, chosen)
    out = kept.results() if resume else {}
    for check in out.values():
        if progress:
            progress(check)
    todo = [t for t in chosen if t.id not in out]
    work = TaskWork(
        run_id="adhoc",  # the label validation's containers always had (unused by the work)
        policy_factory=NoopPolicy,
        repeats=repeats,
        episodes_per_job=repeats + 2,  # at least: the oracle runs, noop, the perturbed oracle
    )
    for check in _run(executor or LocalExecutor(concurrency), env_id, todo, work):
        kept.keep(check)
        out[check.task_id] = check
        if progress:
            progress(check)
    return [*bad, *(out[t.id] for t in chosen if t.id in out)]


def _run(executor: Executor, env_id: str, tasks: list[Task], work: TaskWork) -> Iterable[TaskCheck]:
    """Each task's result as the executor finishes it (one job per task)."""
    if not tasks:
        return
    jobs = [
        Job(env_id=env_id, task=t, sample_index=0, seed=0, episode_id=uuid.uuid4().hex)
        for t in tasks
    ]
    with contextlib.closing(executor.run(jobs, work)) as finished:
        for done in finished:
            yield TaskResult.check_of(done)


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


class _Kept:
    """The run store's view of one validation: each task's kept result, by fingerprint.

    The fingerprints are taken before any task runs (the task files as they were).
    """

    def __init__(self, env_id: str, repeats: int, store: Store | None, tasks: list[Task]) -> None:
        self.env_id, self.store = env_id, store
        self.keys: dict[str, str] = {}
        if store is not None and tasks:
            code = code_hash(env_id)
            inputs = env_class(env_id).task_inputs
            self.keys = {t.id: fingerprint(t, repeats, code, inputs(t)) for t in tasks}

    def results(self) -> dict[str, TaskCheck]:
        """The kept results of the tasks, marked resumed (none without a store)."""
        out = {}
        for task_id, key in self.keys.items():
            row = self.store.validation(self.env_id, task_id, key) if self.store else None
            if row is not None:
                check = TaskCheck.model_validate(row.result)
                out[task_id] = check.model_copy(update={"resumed": True})
        return out

    def keep(self, check: TaskCheck) -> None:
        """Keep a result unless it is worth running again (an infrastructure error)."""
        if self.store is None or check.infra:
            return
        row = ValidationRow(
            env_id=check.env_id,
            task_id=check.task_id,
            fingerprint=self.keys[check.task_id],
            ok=check.ok,
            result=check.model_dump(mode="json"),
            finished_at=time.time(),
        )
        self.store.keep_validation(row)


class TaskResult(EpisodeResult):
    """A validated task as an executor hands a job back: a summary and its `TaskCheck`.

    ``outcome`` is ``pass`` for a valid task, ``infra_error`` for one not validated
    (worth running again), ``fail`` for an invalid one.
    """

    check: TaskCheck
    """The task's whole result."""

    @classmethod
    def of(cls, check: TaskCheck) -> TaskResult:
        """The result of a job that validated a task."""
        outcome: Outcome = "pass" if check.ok else "infra_error" if check.infra else "fail"
        return cls(
            env_id=check.env_id,
            task_id=check.task_id,
            outcome=outcome,
            end_reason="; ".join(check.problems)[:300],
            duration_s=check.duration_s,
            check=check,
        )

    @staticmethod
    def check_of(done: Finished) -> TaskCheck:
        """A finished job's check; a job the executor lost (a worker died) is not validated."""
        if isinstance(done.result, TaskResult):
            return done.result.check
        why = f"infra_error: validation stopped: {done.result.end_reason[:300]}"
        return TaskCheck(task_id=done.job.task.id, env_id=done.job.env_id, problems=[why])


@dataclass(frozen=True)
class TaskWork(EpisodeWork):
    """Validation's work for an executor: a job is one task, its checks one after another.

    The executor's policy is not used: each check plays its own (the oracle, noop, the
    perturbed oracle, the panel's scripts). The task holds its place for all of them:
    its episodes do not announce their grading to the executor, so ``concurrency``
    tasks run at once, as many as the pools are sized for.

    Attributes:
        repeats: oracle runs and re-grades per task.
    """

    repeats: int = 3

    def __call__(self, job: Job, policy: Policy) -> Finished:
        """Validate the job's task; a failure of one task never ends the others."""
        start = time.monotonic()
        with watch_phases(_no_phase):
            try:
                check = validate_task(
                    job.env_id, job.task.id, self.repeats, sandboxes=self.sandboxes, task=job.task
                )
            except GymError as exc:  # one task's failure must not end the whole run
                infra = "infra_error: " if isinstance(exc, SandboxError | InfraError) else ""
                why = f"{infra}validation stopped: {type(exc).__name__}: {str(exc)[:300]}"
                check = TaskCheck(task_id=job.task.id, env_id=job.env_id, problems=[why])
        check.duration_s = round(time.monotonic() - start, 3)
        return Finished(job, TaskResult.of(check), 1)


def _no_phase(phase: str) -> None:
    """Phases of a task's episodes are not the executor's: the task keeps its place."""
