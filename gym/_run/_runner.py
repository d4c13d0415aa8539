"""Benchmark runs: plan episodes, run them concurrently, commit each one atomically.

A run is identified by a hash of its configuration, an episode by a hash of the run,
environment, task, sample index and seed. Running the same command again skips the
episodes already committed and finishes the rest, so a crash or a ``kill -9`` loses
nothing but the episodes in flight, and never duplicates one. Each episode is committed
as soon as its executor yields it; a stopped run (SIGINT, SIGTERM: see `LocalExecutor`)
commits every episode that finished before it returns.

Nothing is stored before the whole plan is known good: environments, split, task ids, k
and limit, at least one episode, and (for episodes on this machine) the model server of
a served policy or user answering with its model, and the engine reachable with each
environment's image there or built. Then the run's status says where it stands
(`gym._store.RunStatus`): running (with a heartbeat every `HEARTBEAT_S`), stopped and by
whom, failed and why, or finished: finished once every episode it was to run is
committed, even when a stop came after the last one started.

The run's sandboxes come from its configuration's provider (`RunConfig.sandboxes`; the
default one when None), which the runner hands to the environments and the executor and
talks to only through its methods.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from gym._core._errors import ConfigError, GymError, TaskNotFound
from gym._core._models import Split, Task, natural_key
from gym._core._version import __version__
from gym._envs._env import default_sandboxes, env_of
from gym._envs._registry import env_ids, make, spec_of, tasks_of
from gym._envs._splits import split_uses
from gym._policy import Policy, Turn
from gym._policy._user import NamedUser
from gym._run._executor import EpisodeWork, Event, Executor, Job, LocalExecutor, NamedPolicy
from gym._run._rollout import EpisodeResult
from gym._sandbox import SandboxProvider
from gym._store import (
    HEARTBEAT_S,
    EpisodeRow,
    LeaseLost,
    RunRow,
    RunState,
    StepRow,
    Store,
    TurnEnd,
    TurnsRow,
    VerdictRow,
)

__all__ = [
    "Job",
    "RunConfig",
    "RunProgress",
    "SUITES",
    "check_sandboxes",
    "check_servers",
    "check_split",
    "check_task_ids",
    "end_state",
    "expand_envs",
    "plan",
    "run",
    "select_tasks",
]

log = logging.getLogger("gym.runner")

SUITES: dict[str, Callable[[], list[str]]] = {
    "bundled": lambda: [e for e in env_ids() if e.startswith("boxgym/")],
}
"""Named groups of environments usable wherever an env id is expected."""


class RunConfig(BaseModel):
    """Everything that defines a run; its hash is the run id."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    envs: list[str]
    """Environment ids."""
    policy: str
    """Policy name."""
    policy_params: dict[str, Any] = Field(default_factory=dict)
    """Policy settings that change its behaviour (model, temperature, base URL...)."""
    user: str | None = None
    """Who plays the user of tasks with a ``user`` scenario (``gym run --user``:
    scripted, local, openai; `gym.policies.NamedUser`); None: the scripted turns."""
    user_params: dict[str, Any] = Field(default_factory=dict)
    """The user's settings (model, base URL, seed...), as `policy_params` are the agent's."""
    k: int = 1
    """Samples per task."""
    seed: int = 0
    """Base seed; each sample's reset seed derives from it."""
    split: Split | None = None
    """Only tasks of this split."""
    limit: int | None = None
    """At most this many tasks per environment (the first in natural id order)."""
    tasks: list[str] | None = None
    """Only these task ids."""
    max_steps: int | None = None
    """Override of the environments' step budgets."""
    runtime: str | None = None
    """The OCI runtime every sandbox runs under (``runsc``); None: the engine's default.
    Sandboxes take it from ``$GYM_RUNTIME`` (`gym run --runtime` sets it); `run` checks
    that the two agree."""
    label: str = Field(default="", exclude=True)
    """A name for people; not part of the id."""
    sandboxes: SandboxProvider | None = Field(default=None, exclude=True)
    """Where the run's sandboxes come from; None: the default provider (hardened Docker
    containers). Not part of the id, nor stored: the same run may resume on another."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The config as data; a run without a user dumps (and hashes) as runs did before."""
        data: dict[str, Any] = handler(self)
        if self.user is None:
            data.pop("user", None)
            data.pop("user_params", None)
        return data

    def provider(self) -> SandboxProvider:
        """The run's sandbox provider (the default one when none is set)."""
        return self.sandboxes or default_sandboxes()

    @property
    def run_id(self) -> str:
        """A short content hash of the configuration.

        A setting left at None is not hashed, so runs made before it existed keep their ids.
        """
        unset = {"runtime"} if self.runtime is None else set()
        blob = json.dumps(self.model_dump(mode="json", exclude=unset), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


class RunProgress(BaseModel):
    """Counters shown while a run goes."""

    total: int = 0
    skipped: int = 0
    done: int = 0
    passed: int = 0
    failed: int = 0
    infra_error: int = 0
    tokens: int = 0
    started: float = Field(default_factory=time.monotonic)
    stopped: bool = False
    """The run was stopped before its end (the next run of the same command finishes it)."""
    containers: dict[str, int] = Field(default_factory=dict)
    """Containers this process started during the run, by role and how (``agent.cold``,
    ``grader.spare``, ``grader.spare_used``, ``grader.spare_dropped``...)."""

    @property
    def pass_rate(self) -> float:
        """Passes over graded (non-infra) episodes so far."""
        graded = self.passed + self.failed
        return self.passed / graded if graded else 0.0


def expand_envs(names: list[str]) -> list[str]:
    """Env ids from ids and suite names (``bundled``), checked to exist, deduplicated."""
    out: list[str] = []
    for name in names:
        ids = SUITES[name]() if name in SUITES else [name]
        for env_id in ids:
            spec_of(env_id)
            if env_id not in out:
                out.append(env_id)
    if not out:
        raise ConfigError("no environments to run")
    return out


def _seed(base: int, env_id: str, task_id: str, index: int) -> int:
    digest = hashlib.sha256(f"{base}:{env_id}:{task_id}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def select_tasks(
    tasks: list[Task],
    *,
    split: str | None = None,
    ids: list[str] | None = None,
    limit: int | None = None,
) -> list[Task]:
    """Tasks filtered by split and ids, in natural id order, the first ``limit`` of them."""
    chosen = [t for t in tasks if (split is None or t.split == split) and (not ids or t.id in ids)]
    return sorted(chosen, key=lambda t: natural_key(t.id))[:limit]


def check_split(env_ids: list[str], split: str | None) -> None:
    """Refuse a split that none of the environments declares (a typo runs nothing).

    Raises:
        ConfigError: no environment declares it; the message lists what each declares.
    """
    if split is None:
        return
    declared = {env_id: split_uses(env_id) for env_id in env_ids}
    if not any(split in roles for roles in declared.values()):
        known = "; ".join(f"{e}: {', '.join(r)}" for e, r in declared.items())
        raise ConfigError(f"no environment declares the split {split!r} (declared: {known})")


def _check_counts(config: RunConfig) -> None:
    """Refuse a k or limit that plans nothing (0, negative)."""
    if config.k < 1:
        raise ConfigError(f"k (samples per task, -k) must be at least 1, not {config.k}")
    if config.limit is not None and config.limit < 1:
        raise ConfigError(
            f"limit (tasks per environment, --limit) must be at least 1, not {config.limit}"
        )


def check_task_ids(wanted: list[str] | None, known: dict[str, list[Task]]) -> None:
    """Refuse task ids that no environment of the run has (a typo runs nothing).

    Args:
        wanted: the ids asked for (None: every task).
        known: environment id -> its tasks.

    Raises:
        TaskNotFound: an id is unknown; the message names it and the closest ids.
    """
    ids = {t.id for tasks in known.values() for t in tasks}
    unknown = [i for i in dict.fromkeys(wanted or []) if i not in ids]
    if not unknown:
        return
    close = {c for i in unknown for c in difflib.get_close_matches(i, ids, n=3, cutoff=0.5)}
    shown = sorted(close or ids, key=natural_key)[:5]
    hint = "did you mean" if close else f"{len(ids)} tasks, for example"
    raise TaskNotFound(
        f"no task {', '.join(map(repr, unknown))} in {', '.join(known)} "
        f"({hint}: {', '.join(shown)})"
    )


def plan(config: RunConfig) -> list[Job]:
    """The episodes of a run, in a stable order (environments, then tasks by natural id).

    Raises:
        ConfigError: k or limit below 1, a split no environment declares, or no episode
            to run at all.
        TaskNotFound: a task id that no environment of the run has.
    """
    _check_counts(config)
    check_split(config.envs, config.split)
    known = {env_id: tasks_of(env_id) for env_id in config.envs}
    check_task_ids(config.tasks, known)
    jobs: list[Job] = []
    for env_id in config.envs:
        tasks = select_tasks(
            known[env_id], split=config.split, ids=config.tasks, limit=config.limit
        )
        for task in tasks:
            for index in range(config.k):
                seed = _seed(config.seed, env_id, task.id, index)
                key = f"{config.run_id}:{env_id}:{task.id}:{index}:{seed}"
                episode_id = hashlib.sha256(key.encode()).hexdigest()[:24]
                jobs.append(
                    Job(
                        env_id=env_id,
                        task=task,
                        sample_index=index,
                        seed=seed,
                        episode_id=episode_id,
                    )
                )
    if not jobs:
        wanted = [f"split {config.split!r}"] if config.split else []
        wanted += [f"the ids {', '.join(config.tasks)}"] if config.tasks else []
        raise ConfigError(
            f"nothing to run: no task of {', '.join(config.envs)} has "
            f"{' and '.join(wanted) or 'a task'}"
        )
    return jobs


def check_sandboxes(config: RunConfig, jobs: list[Job]) -> None:
    """Reach each environment's sandboxes once: the engine answers, the image is there.

    A missing image is built now (as its first episode would), so a run that cannot
    start fails here, before anything is stored.

    Raises:
        EngineUnavailable: the Docker engine does not answer.
        ImageError: an image is missing and could not be built.
    """
    first: dict[str, Task] = {}
    for job in jobs:
        first.setdefault(job.env_id, job.task)
    for env_id, task in first.items():
        env = make(env_id, run=config.run_id, tasks=[task], **_env_kwargs(config))
        try:
            env_of(env).sandbox_config()
        finally:
            env.close()


_INTEGER_MAX = 2**63 - 1
"""The largest SQLite INTEGER: an episode's token sums stop there."""


def _tokens(counts: Iterable[int]) -> int:
    """An episode's sum of its turns' token counts, capped to what the store can hold.

    Each count is below `gym._policy._base.TOKENS_MAX`; the sum of a very long episode
    could still pass an SQLite INTEGER, and the commit must never fail on it.
    """
    return min(sum(counts), _INTEGER_MAX)


def _rows(
    config: RunConfig, job: Job, result: EpisodeResult, attempts: int, version: str
) -> tuple[EpisodeRow, list[StepRow], VerdictRow | None, TurnsRow]:
    turns, steps = result.turns, result.steps
    usage = [t.usage for t in turns]
    verdict = result.verdict
    episode = EpisodeRow(
        id=job.episode_id,
        run_id=config.run_id,
        env_id=job.env_id,
        env_version=int(job.env_id.rsplit("-v", 1)[1]),
        task_id=job.task.id,
        split=job.task.split,
        tags=dict(job.task.tags),
        sample_index=job.sample_index,
        seed=job.seed,
        policy=config.policy,
        policy_params=config.policy_params,
        outcome=result.outcome,
        reward=result.reward,
        end_reason=result.end_reason[:2000],
        attempts=attempts,
        image_digest=verdict.image_digest if verdict else "",
        grader_version=verdict.grader_version if verdict else "",
        hidden_hash=verdict.hidden_hash if verdict else job.task.hidden_hash,
        boxgym_version=version,
        started_at=time.time() - result.duration_s,
        duration_s=result.duration_s,
        n_steps=len(steps),
        prompt_tokens=_tokens(u.get("prompt_tokens", 0) for u in usage),
        completion_tokens=_tokens(u.get("completion_tokens", 0) for u in usage),
        policy_latency_s=sum(t.latency_s for t in turns),
        messages=with_reasoning(result.messages, turns),
        export=result.export,
    )
    step_rows = []
    said = result.step_turns  # the policy turn of each step (parallel calls share one)
    for i, step in enumerate(steps):
        n = said[i] if i < len(said) else i
        again = 0 < i < len(said) and said[i - 1] == n  # a later call: its turn is stored once
        turn = turns[n] if n < len(turns) and not again else None
        step_rows.append(
            StepRow(
                episode_id=job.episode_id,
                index=i,
                tool=step.call.name if step.call else "",
                arguments=step.call.arguments if step.call else {},
                observation=step.observation,
                error=step.error,
                exit_code=step.exit_code,
                timed_out=step.timed_out,
                env_duration_s=step.duration_s,
                policy_latency_s=turn.latency_s if turn else 0.0,
                retries=turn.retries if turn else 0,
                prompt_token_ids=turn.prompt_token_ids if turn else None,
                completion_token_ids=turn.completion_token_ids if turn else None,
                logprobs=turn.logprobs if turn else None,
            )
        )
    verdict_row = VerdictRow.of(job.episode_id, verdict) if verdict is not None else None
    return episode, step_rows, verdict_row, _turns_row(job.episode_id, result)


def _turns_row(episode_id: str, result: EpisodeResult) -> TurnsRow:
    """The episode's offered tools, the user turn of each step and the turn ends."""
    steps = result.steps
    return TurnsRow(
        episode_id=episode_id,
        tools=result.tools,
        step_turns=[s.turn for s in steps],
        step_assistant=result.step_turns,
        ends=[
            TurnEnd(step=i, turn=s.turn, user=s.user).model_dump()
            for i, s in enumerate(steps)
            if s.turn_end
        ],
        user_transcript=result.user_transcript,
    )


def with_reasoning(messages: list[dict[str, Any]], turns: list[Turn]) -> list[dict[str, Any]]:
    """The conversation to store: each assistant message with its turn's reasoning.

    The policy keeps reasoning out of the messages it sends back to the model; the store
    keeps it, so that the viewer can show it (the n-th assistant message is the n-th turn).
    """
    said = iter(turns)
    stored = []
    for message in messages:
        turn = next(said, None) if message.get("role") == "assistant" else None
        if turn is not None and turn.reasoning and not message.get("reasoning"):
            message = {**message, "reasoning": turn.reasoning}
        stored.append(message)
    return stored


def run(
    config: RunConfig,
    *,
    store: Store,
    policy_factory: Callable[[], Policy] | None = None,
    concurrency: int | None = 2,
    executor: Executor | None = None,
    max_attempts: int = 3,
    retry_infra: bool = False,
    progress: Callable[[RunProgress], None] | None = None,
    stop: threading.Event | None = None,
    events: Callable[[Event], None] | None = None,
) -> RunProgress:
    """Run (or resume) a benchmark and commit every episode to the store.

    The episodes run on ``executor``; this process alone commits each finished one,
    once, in its own transaction.

    Args:
        config: what to run.
        store: where episodes are committed.
        policy_factory: builds a policy (called once per worker); it must pickle for
            an executor that runs episodes in other processes. By default the
            configuration's policy by name (`NamedPolicy`).
        concurrency: episodes acting at once (for the default local executor); None
            adapts it to the machine (`gym._run._concurrency.Limiter`).
        executor: where episodes run; by default threads of this process
            (`LocalExecutor` with ``concurrency``, ``stop`` and ``events``).
        max_attempts: runs of an episode that ends in infra_error before it is
            recorded as such.
        retry_infra: also rerun episodes committed earlier as infra_error.
        progress: called after each committed episode.
        stop: for the default executor: set it to stop the run (nothing new starts,
            episodes in flight get a grace period, every finished one is committed; the
            returned progress says ``stopped`` when some were left to run). An executor
            given holds its own. The
            event's ``reason`` attribute, when it has one, is recorded as who stopped
            the run (the CLI's says ``Ctrl-C`` or ``SIGTERM``).
        events: receives a ``planned`` event first (``total`` episodes, ``skipped``:
            committed before), a ``committed`` event per episode and a ``done`` or
            ``stopped`` one at the end (and the default executor's events).

    The run's status (`Store.run_status`) is set running once the plan is checked, and
    stopped, failed or finished as the run ends (`end_state`); nothing is stored before.
    This process holds the run meanwhile (`Store.start_run`): another `gym run` of it is
    refused while this one beats. An episode another process committed first is kept
    (`Store.commit_episode`) and counted as ``skipped``.

    Raises:
        ConfigError: the config names a runtime the sandboxes would not run under, or
            plans nothing (see `plan`).
        TaskNotFound: a task id no environment has.
        PolicyError: nothing answers at the base URL of the named policy or user (local
            episodes; `check_servers`), or ConfigError when it does not serve their model.
        EngineUnavailable: the Docker engine does not answer (local episodes).
        ImageError: an image is missing and cannot be built.
        RunBusy: another process runs it now (its heartbeat is fresh).
        LeaseLost: another process took the run over after this one stopped beating
            (raised once the executor is closed; what was committed is kept).
    """
    _check_runtime(config)
    jobs = plan(config)
    committed = store.episode_outcomes(config.run_id)
    todo = [
        j
        for j in jobs
        if j.episode_id not in committed
        or (retry_infra and committed[j.episode_id] == "infra_error")
    ]
    factory = policy_factory or NamedPolicy(config.policy, config.policy_params)
    if isinstance(factory, NamedPolicy):
        factory.check_plan(todo)
    user = NamedUser(config.user, config.user_params) if config.user else None
    if todo and (executor is None or isinstance(executor, LocalExecutor)):
        check_servers(factory, user)  # Ray workers reach servers (and engines) from their nodes
        check_sandboxes(config, todo)
    store.start_run(_run_row(config), planned=len(jobs))
    state = RunProgress(total=len(jobs), skipped=len(jobs) - len(todo))
    work = EpisodeWork(
        config.run_id,
        factory,
        _env_overrides(config),
        max_attempts,
        config.sandboxes,
        user_factory=user,
    )
    executor = executor or LocalExecutor(concurrency, stop=stop, events=events)
    emit = events or _ignore
    emit(_planned(config, state))
    sandboxes = config.provider()
    before = sandboxes.counts()
    got: set[str] = set()  # the episodes committed by this run
    lost: list[LeaseLost] = []  # another process took the run over (a beat or commit saw it)
    with _status_kept(store, config.run_id), _heartbeat(store, config.run_id, lost, executor):
        with contextlib.closing(executor.run(todo, work)) as finished:
            for job, result, attempts in finished:
                try:
                    written = store.commit_episode(
                        *_rows(config, job, result, attempts, __version__)
                    )
                except LeaseLost as exc:  # taken over before the heartbeat saw it: the same
                    _lose(exc, lost, executor)
                    break
                if written:
                    _count(state, result)
                    emit(_committed(job, result))
                else:  # another process committed it first: its outcome stands
                    state.skipped += 1
                got.add(job.episode_id)
                if progress:
                    progress(state)
                if lost:
                    break
        if lost:  # the executor is closed: nothing of this process runs on
            raise lost[0]
    left = sum(j.episode_id not in got for j in todo)
    ended, detail = end_state(left, _stopped_by(executor, stop) if executor.stopped else None)
    state.stopped = ended == "stopped"
    store.end_run(config.run_id, ended, detail)
    state.containers = _delta(before, sandboxes.counts())
    emit({"event": "stopped" if state.stopped else "done", "t": time.time(), **_tail(executor)})
    return state


def check_servers(factory: Callable[[], Policy], user: NamedUser | None) -> None:
    """Reach the model servers of the run's policy and user once, before anything is stored.

    A named policy or user that talks to a server (openai) asks it for its models, so
    that a server that is not up fails the run in a second, not each episode after its
    retries. A policy factory of the caller's own is not checked: it may need no server.

    Raises:
        PolicyError: nothing answers at a base URL.
        ConfigError: a server does not serve the model named.
    """
    if isinstance(factory, NamedPolicy):
        factory.check()
    if user is not None:
        user.check()


def end_state(left: int, stopped_by: str | None) -> tuple[RunState, str]:
    """The status of a run whose executor returned, and its detail.

    Finished once every episode it was to run is committed, even when a stop came after
    the last one started (nothing is left to run again); else stopped, by whom
    (``stopped_by``, None when nobody asked: its executor left ``left`` episodes).
    """
    if left <= 0:
        return "finished", ""
    return "stopped", stopped_by or f"{left} episodes not run"


def _check_runtime(config: RunConfig) -> None:
    if (config.runtime or None) != (os.environ.get("GYM_RUNTIME") or None):
        raise ConfigError(
            f"the run says runtime {config.runtime!r} but sandboxes use "
            f"{os.environ.get('GYM_RUNTIME')!r} ($GYM_RUNTIME): set the same in both"
        )


def _run_row(config: RunConfig) -> RunRow:
    now = time.time()
    return RunRow(
        id=config.run_id,
        created_at=now,
        updated_at=now,
        config=config.model_dump(mode="json"),
        policy=config.policy,
        boxgym_version=__version__,
        label=config.label,
    )


@contextlib.contextmanager
def _heartbeat(
    store: Store, run_id: str, lost: list[LeaseLost], executor: Executor
) -> Iterator[None]:
    """Refresh the run's heartbeat every `HEARTBEAT_S` seconds while inside.

    A run whose process dies without a word (``kill -9``, a lost machine) stops beating,
    and its status reads ``interrupted`` once the beat is older than the store's bound.
    A beat refused because another process took the run over (`LeaseLost`) ends the
    beating, goes into ``lost`` and stops a local executor: nothing new starts.
    """
    done = threading.Event()

    def beat() -> None:
        while not done.wait(HEARTBEAT_S):
            try:
                store.heartbeat(run_id)
            except LeaseLost as exc:
                _lose(exc, lost, executor)
                return
            except GymError as exc:  # the next beat or commit tries again
                log.warning("heartbeat of run %s failed: %s", run_id, exc)

    thread = threading.Thread(target=beat, name=f"gym-heartbeat-{run_id[:8]}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=5)


def _lose(exc: LeaseLost, lost: list[LeaseLost], executor: Executor) -> None:
    """Say that another process holds the run (a beat or commit refused), keep it in ``lost``.

    A local executor is stopped: nothing new starts.
    """
    log.warning("%s", exc)
    lost.append(exc)
    if isinstance(executor, LocalExecutor):
        executor.stop.set()


@contextlib.contextmanager
def _status_kept(store: Store, run_id: str) -> Iterator[None]:
    """Record a run that ends by an exception: stopped (Ctrl-C, a signal) or failed."""
    try:
        yield
    except BaseException as exc:
        state, detail = _ended_by(exc)
        with contextlib.suppress(GymError):  # the store itself failing: keep its error
            store.end_run(run_id, state, detail)
        raise


def _ended_by(exc: BaseException) -> tuple[RunState, str]:
    """The state and detail of a run that an exception ended."""
    if isinstance(exc, KeyboardInterrupt):
        return "stopped", "Ctrl-C"
    if isinstance(exc, SystemExit):
        return "stopped", _signal_name(exc.code)
    lines = str(exc).strip().splitlines()
    return "failed", f"error: {lines[0] if lines else type(exc).__name__}"


def _signal_name(code: object) -> str:
    """``Ctrl-C`` or ``SIGTERM`` from an exit code 128 + signal; else ``exit CODE``."""
    if isinstance(code, int) and code > 128:
        with contextlib.suppress(ValueError):
            signum = signal.Signals(code - 128)
            return "Ctrl-C" if signum == signal.SIGINT else signum.name
    return f"exit {code}"


def _stopped_by(executor: Executor, stop: threading.Event | None) -> str:
    """Who stopped a run its executor reports stopped: the stop event's ``reason``.

    The CLI's signal handler gives its event a ``reason`` (``Ctrl-C``, ``SIGTERM``); a
    plain event says only that a stop was requested.
    """
    event = executor.stop if isinstance(executor, LocalExecutor) else stop
    return str(getattr(event, "reason", "") or "stop requested")


def _ignore(event: Event) -> None:
    """An event sink that drops everything."""


def _planned(config: RunConfig, state: RunProgress) -> Event:
    """The first event of a run: its episodes, and how many were committed before."""
    return {
        "event": "planned",
        "t": time.time(),
        "run": config.run_id,
        "label": config.label,
        "total": state.total,
        "skipped": state.skipped,
    }


def _committed(job: Job, result: EpisodeResult) -> Event:
    event: Event = {"event": "committed", "job": job.episode_id, "outcome": result.outcome}
    if result.steps:
        event["first_step_at"] = result.steps[0].started_at
    return {**event, "t": time.time()}


def _tail(executor: Executor) -> Event:
    if isinstance(executor, LocalExecutor):
        return {"abandoned": executor.abandoned, "limit": executor.limiter.value}
    return {}


def _delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


def _env_overrides(config: RunConfig) -> dict[str, Any]:
    return {"max_steps": config.max_steps} if config.max_steps else {}


def _env_kwargs(config: RunConfig) -> dict[str, Any]:
    """Keyword arguments of the run's environments: overrides, and its own provider."""
    provider = {"sandboxes": config.sandboxes} if config.sandboxes is not None else {}
    return {**_env_overrides(config), **provider}


def _count(state: RunProgress, result: EpisodeResult) -> None:
    state.done += 1
    if result.outcome == "pass":
        state.passed += 1
    elif result.outcome == "fail":
        state.failed += 1
    else:
        state.infra_error += 1
    state.tokens += sum(t.usage.get("completion_tokens", 0) for t in result.turns)
