"""Injected faults, each with the outcome it must end in, checked through a real run store.

Every fault runs episodes through the benchmark runner (`gym._run._runner.run`) into a run
store that already holds committed episodes; after it, besides its own expected
outcome, three things must hold: every row committed before is byte-identical, no
episode id appears twice, and no container of this process is left behind.

Faults that disturb the shared Docker engine (restarting the daemon) are marked
``destructive`` and run only when asked (``gym redteam --destructive``).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from gym._core._cache import LRUCache
from gym._core._models import Task
from gym._core._tools import ToolCall
from gym._envs._registry import tasks_of
from gym._policy import OpenAIPolicy, Policy, ScriptPolicy
from gym._redteam._core import Attack, Context, Finding, Names, register
from gym._redteam._stub import Reply, StubServer, completion
from gym._run._runner import RunConfig, run
from gym._sandbox import (
    DockerSandbox,
    Sandbox,
    SandboxConfig,
    SandboxPool,
    client,
    default_sandboxes,
    list_boxgym,
    owner_label,
)
from gym._store import Store

__all__ = ["Fault", "FaultStore", "restart_engine"]

ENV_TASKS = {
    "boxgym/PyFunc-v0": "sum-of-digits",
    "boxgym/SQL-v0": "customers-per-country",
    "boxgym/Support-v0": "cancel-and-refund",
}
CODE = "boxgym/PyFunc-v0"
ALL = tuple(ENV_TASKS)
OWNER = "boxgym.owner"


# -- the store every fault commits into -----------------------------------------------------


class FaultStore:
    """A run store in a temporary folder, seeded with committed episodes of another run."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="boxgym-redteam-store-"))
        self.path = self.folder / "runs.db"
        self.url = f"sqlite:///{self.path}"
        self.store = Store(self.url)

    def seed(self) -> None:
        """Commit a small oracle run first: the rows every fault must leave untouched."""
        config = _config(envs=[CODE], policy="oracle", tasks=[ENV_TASKS[CODE]], label="seed")
        from gym._policy import OraclePolicy

        run(config, store=self.store, policy_factory=OraclePolicy, concurrency=1)

    def rows(self) -> dict[tuple[str, int], bytes]:
        """Every row of every table, by (table, rowid), as bytes."""
        return snapshot(self.path)

    def close(self) -> None:
        """Remove the store's folder (its database and the killed runs' copies)."""
        self.store.close()
        shutil.rmtree(self.folder, ignore_errors=True)


_VOLATILE = {"updated_at"}
"""Columns that change by design when a run goes on (a run's last activity)."""
_STATE_TABLES = {"run_status", "run_owner"}
"""Tables of a run's state (running, stopped, finished...; the process holding it): they
change by design when a run resumes, so they are not committed data; the rows that check
them read them."""


def snapshot(path: Path) -> dict[tuple[str, int], bytes]:
    """Every row of every table of a SQLite file, by (table, rowid), as JSON bytes."""
    if not path.exists():
        return {}
    out: dict[tuple[str, int], bytes] = {}
    with contextlib.closing(sqlite3.connect(path)) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in (t for t in tables if t not in _STATE_TABLES):
            cursor = conn.execute(f'SELECT rowid, * FROM "{table}"')  # noqa: S608
            keep = [i for i, d in enumerate(cursor.description) if i and d[0] not in _VOLATILE]
            for row in cursor:
                out[(table, row[0])] = json.dumps([row[i] for i in keep], default=repr).encode()
    return out


def episode_ids(path: Path) -> list[str]:
    """The id of every committed episode (duplicates kept, to be found)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return [r[0] for r in conn.execute("SELECT id FROM episodes")]


def run_states(path: Path) -> list[str]:
    """The state of every run in a SQLite store (``[]`` for a store without states)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        try:
            return [r[0] for r in conn.execute("SELECT state FROM run_status")]
        except sqlite3.OperationalError:
            return []


def changed(before: dict[tuple[str, int], bytes], after: dict[tuple[str, int], bytes]) -> list[str]:
    """Rows committed before that are gone or different now."""
    return [f"{t}#{i}" for (t, i), data in before.items() if after.get((t, i)) != data]


def mine() -> list[str]:
    """Ids of the containers this process owns (still existing)."""
    me = owner_label()
    return [c.id[:12] for c in list_boxgym() if c.labels.get(OWNER) == me]


def leftovers(wait: float = 60.0) -> list[str]:
    """This process's containers that are still there once its pools are emptied."""
    default_sandboxes().resize(0)
    deadline = time.monotonic() + wait
    while (left := mine()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


# -- a fault: run, then the three checks ---------------------------------------------------


class Fault(Attack):
    """A fault injected into runs of the benchmark runner, judged after it.

    Subclasses implement `inject`, which runs what it must through the runner into
    ``store`` and returns what it observed (and whether that was the expected end).
    """

    kind = "fault"
    solo = True

    def __init__(self, name: str, envs: tuple[str, ...], expected: str, **settings: Any) -> None:
        self.name, self.envs, self.expected = name, envs, expected
        for key, value in settings.items():
            setattr(self, key, value)

    def inject(self, ctx: Context, env_id: str, store: FaultStore) -> Finding:
        """Cause the fault and say what happened."""
        raise NotImplementedError

    def run(self, ctx: Context, env_id: str) -> Finding:
        """Inject the fault, then check the store and the containers."""
        store = _store(ctx)
        before = store.rows()
        default_sandboxes().resize(0)
        try:
            finding = self.inject(ctx, env_id, store)
        finally:
            left = leftovers()
            default_sandboxes().resize(int(os.environ.get("GYM_POOL_SIZE", "1")))
        after = store.rows()
        ids = episode_ids(store.path)
        problems = []
        if broken := changed(before, after):
            problems.append(f"committed rows changed: {', '.join(broken[:4])}")
        if len(ids) != len(set(ids)):
            problems.append("duplicate episode ids")
        if left:
            problems.append(f"containers left: {', '.join(left[:4])}")
        if problems:
            return Finding(f"{finding.observed}; " + "; ".join(problems), False)
        return Finding(f"{finding.observed}; store intact, no leftovers", finding.held)


def _store(ctx: Context) -> FaultStore:
    store = ctx.shared.get("fault_store")
    if store is None:
        store = ctx.shared["fault_store"] = FaultStore()
        store.seed()
    assert isinstance(store, FaultStore)
    return store


def _config(**settings: Any) -> RunConfig:
    """A run config under the runtime this process's sandboxes use."""
    return RunConfig(runtime=os.environ.get("GYM_RUNTIME") or None, **settings)


def _task(env_id: str) -> Task:
    wanted = ENV_TASKS.get(env_id, ENV_TASKS[CODE])
    return next(t for t in tasks_of(env_id) if t.id == wanted)


def _run(
    ctx: Context,
    store: FaultStore,
    env_id: str,
    name: str,
    factory: Callable[[], Policy],
    *,
    attempts: int = 2,
) -> Any:
    """One episode of ``env_id``'s fault task through the runner; its committed row."""
    config = _config(
        envs=[env_id],
        policy=f"redteam-{name}",
        policy_params={"nonce": ctx.names().hexed()},
        tasks=[ENV_TASKS.get(env_id, ENV_TASKS[CODE])],
        label=f"{ctx.label} {name}",
    )
    run(config, store=store.store, policy_factory=factory, concurrency=1, max_attempts=attempts)
    (episode,) = store.store.episodes(config.run_id)
    verdict = store.store.verdicts(config.run_id).get(episode.id)
    episode.__dict__["redteam_flags"] = {f["name"] for f in verdict.flags} if verdict else set()
    return episode


def _ended(episode: Any, *, outcome: str, flag: str = "") -> Finding:
    """Whether a committed episode ended as the fault requires."""
    flags: set[str] = episode.__dict__.get("redteam_flags", set())
    seen = f"committed {episode.outcome} reward={episode.reward} attempts={episode.attempts}"
    if flags:
        seen += " flags=" + ",".join(sorted(flags))
    ok = episode.outcome == outcome and (outcome != "infra_error" or episode.reward is None)
    if outcome == "fail":
        ok = ok and episode.reward == 0.0
    if flag and flag not in flags:
        return Finding(seen + f" (no {flag} flag)", False)
    return Finding(seen, ok)


# -- container killed mid-episode ---------------------------------------------------------


class _Killer(ScriptPolicy):
    """Reads once, then kills its own container (from the host) and acts again."""

    def __init__(self, first: ToolCall) -> None:
        super().__init__([first, first])
        self.env: Any = None
        self.turns = 0

    def start(self, task: Task, env: Any) -> None:
        self.env, self.turns = env, 0
        super().start(task, env)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        self.turns += 1
        if self.turns == 2:
            kill_container_of(self.env)
        return super().act(messages, tools)


def kill_container_of(env: Any) -> None:
    """Kill the container of an environment's running episode (``docker kill``)."""
    sandbox = env.sandbox
    episode = f"sandbox-{sandbox.id}"
    for container in list_boxgym():
        if container.labels.get("boxgym.episode") == episode:
            client().api.kill(container.id)


_READS = {
    "boxgym/PyFunc-v0": ToolCall(name="bash", arguments={"command": "ls"}),
    "boxgym/SQL-v0": ToolCall(name="sql", arguments={"query": "SELECT 1"}),
    "boxgym/Support-v0": ToolCall(name="get_order", arguments={"order_id": "O5001"}),
}


class ContainerKilled(Fault):
    """The agent's container dies mid-episode: infra_error, never a reward."""

    def inject(self, ctx: Context, env_id: str, store: FaultStore) -> Finding:
        episode = _run(ctx, store, env_id, "killed", lambda: _Killer(_READS[env_id]))
        return _ended(episode, outcome="infra_error")


# -- out of memory and a full disk inside the episode's own limits -------------------------


def _script(calls: Callable[[Names, Task], list[ToolCall]], names: Names) -> Callable[[], Policy]:
    class Scripted(ScriptPolicy):
        def script(self, task: Task, env: Any) -> list[ToolCall]:
            return calls(names, task)

    return Scripted


def _oom_in_grading(names: Names, task: Task) -> list[ToolCall]:
    hoard = names.ident()
    entry = task.data["grading"]["entry"]
    source = (
        f"def {entry}(*args):\n    {hoard} = []\n    while True:\n"
        f"        {hoard}.append(bytearray(1 << 26))\n"
    )
    return [ToolCall(name="write_file", arguments={"path": "solution.py", "content": source})]


def _oom_kill_in_grading(names: Names, task: Task) -> list[ToolCall]:
    """A solution whose children kill each other's memory: the kernel, not Python, says no.

    Each child stays under the worker's address-space limit; together they pass the
    container's memory, so the kernel kills some (no MemoryError is ever raised).
    """
    entry, child = task.data["grading"]["entry"], names.ident()
    fill = 'b"x" * (600 << 20)'
    source = (
        f"import subprocess, sys\n\ndef {entry}(*args):\n"
        f"    {child} = [subprocess.Popen([sys.executable, '-c', "
        f"'import time; x = {fill}; time.sleep(5)']) for _ in range(3)]\n"
        f"    return [p.wait() for p in {child}]\n"
    )
    return [ToolCall(name="write_file", arguments={"path": "solution.py", "content": source})]


def _oom_in_episode(names: Names, task: Task) -> list[ToolCall]:
    program = f"{names.ident()} = [bytearray(1 << 26) for _ in range(64)]"
    return [ToolCall(name="bash", arguments={"command": f"python3 -c '{program}'"})]


def _disk_full(names: Names, task: Task) -> list[ToolCall]:
    fill = " ".join(
        f"dd if=/dev/zero of={d}/{names.ident()} bs=1M count=300 2>/dev/null;"
        for d in ("/tmp", "/home/agent", "/workspace")
    )
    return [
        ToolCall(name="bash", arguments={"command": fill + " df -h /tmp /workspace"}),
        ToolCall(name="write_file", arguments={"path": "solution.py", "content": "x = 1\n"}),
        ToolCall(name="bash", arguments={"command": "echo still here"}),
    ]


class InsideLimits(Fault):
    """A limit of the episode itself is hit: ``fail`` (with its flag), never infra_error."""

    calls: Callable[[Names, Task], list[ToolCall]] = _oom_in_grading
    flag: str = ""

    def inject(self, ctx: Context, env_id: str, store: FaultStore) -> Finding:
        episode = _run(ctx, store, env_id, self.name, _script(self.calls, ctx.names()))
        return _ended(episode, outcome="fail", flag=self.flag)


# -- the host runs out of memory during a grading ------------------------------------------


_BALLAST_MB = 200
"""What the correct solution holds for a moment as it is imported: well within the
grading container's memory and the worker's address space, past the budget below."""
_BUDGET_MB = 160
"""The memory of the cgroup every grading container is put under: less than the
container's own limit, so its OOM is one of the host's, as the container sees it."""


class _PrefixedOracle(ScriptPolicy):
    """The reference solution with ``prefix`` before the content of every file it writes."""

    prefix = ""

    def start(self, task: Task, env: Any) -> None:
        self._queue = [
            ToolCall(
                name=call.name,
                arguments={**call.arguments, "content": self.prefix + call.arguments["content"]},
            )
            if call.name == "write_file"
            else call
            for call in env.oracle_calls(task)
        ]


class _BallastOracle(_PrefixedOracle):
    """The reference solution, which also holds memory for a moment as it is imported."""

    prefix = f"_ballast = b'x' * ({_BALLAST_MB} << 20)\ndel _ballast\n"


class HostOutOfMemory(Fault):
    """The host (a cgroup above the grading container) runs out of memory mid-grading.

    The kernel kills the code under test (its OOM score is the highest) though its
    container stayed below its own limit: infra_error, never the correct solution's fail.
    """

    def inject(self, ctx: Context, env_id: str, store: FaultStore) -> Finding:
        name = f"{_BUDGET_PREFIX}{ctx.names().hexed(8)}"
        with memory_budget(name, _BUDGET_MB << 20) as parent:
            with grading_containers(lambda kw: kw.update(cgroup_parent=parent)) as hits:
                episode = _run(ctx, store, env_id, "host-oom", _BallastOracle, attempts=1)
        found = _ended(episode, outcome="infra_error")
        if not hits:
            return Finding(f"{found.observed}; no grading container was hit", False)
        return found


_BURN_S = 5.0
"""CPU seconds the correct solution spends as it is imported: half the per-call timeout
(10 s), twice it in wall-clock time on a quarter of a CPU."""
_STARVED_CPUS = 0.25
"""The CPUs every grading container gets, as a loaded host leaves it."""


class _BurningOracle(_PrefixedOracle):
    """The reference solution, which also spends `_BURN_S` of CPU as it is imported."""

    prefix = (
        "import time as _time\n_end = _time.process_time() + "
        f"{_BURN_S}\nwhile _time.process_time() < _end:\n    pass\n"
    )


class StarvedOfCpu(Fault):
    """A grading gets a quarter of a CPU, as a loaded host leaves it: a correct solution passes.

    Its timeouts are charged in the container's CPU time, not in the time it waited for
    a CPU (the container's own quota stands in for the host's other work: the same for
    the code, and the same on every engine).
    """

    def inject(self, ctx: Context, env_id: str, store: FaultStore) -> Finding:
        quarter = {"nano_cpus": int(_STARVED_CPUS * 1e9)}
        with grading_containers(lambda kw: kw.update(quarter)) as hits:
            episode = _run(ctx, store, env_id, "starved", _BurningOracle, attempts=1)
        found = _ended(episode, outcome="pass")
        if not hits:
            return Finding(f"{found.observed}; no grading container was hit", False)
        return found


_CGROUP = Path("/sys/fs/cgroup")


@contextlib.contextmanager
def memory_budget(name: str, limit: int) -> Iterator[str]:
    """A cgroup of ``limit`` bytes of memory, for containers made under it meanwhile.

    What the host leaves the containers under it, as they see it: an OOM there is one
    of the host's. Needs root and a cgroup file system it can write (the engine's
    ``cgroupfs`` driver); yields the parent to give the engine (``cgroup_parent``).
    Removed afterwards.
    """
    v1 = _CGROUP / "memory"
    folder = (v1 if v1.is_dir() else _CGROUP) / name
    try:
        folder.mkdir()
        if v1.is_dir():
            (folder / "memory.limit_in_bytes").write_text(str(limit))
        else:
            (_CGROUP / "cgroup.subtree_control").write_text("+memory")
            (folder / "memory.max").write_text(str(limit))
    except OSError as exc:
        _remove_cgroups(name, wait=0)
        raise RuntimeError(
            f"cannot make the cgroup {folder} ({exc}): this row needs root and a cgroup "
            "file system it can write"
        ) from exc
    try:
        yield f"/{name}"
    finally:
        _remove_cgroups(name)


def _remove_cgroups(name: str, wait: float = 30.0) -> None:
    """Remove the cgroup ``name`` from every hierarchy the engine made it in.

    Its containers' own cgroups go as the engine removes them (in the background, after
    the episode): they are waited for, up to ``wait`` seconds. On a loaded machine that
    may not be enough, so earlier rows' budgets left behind (empty by now, made over
    `_STALE_S` ago) are removed too.
    """
    deadline = time.monotonic() + wait
    while True:
        folders = [p / name for p in (_CGROUP, *_CGROUP.iterdir()) if (p / name).is_dir()]
        for folder in folders:
            with contextlib.suppress(OSError):  # busy: a container is still there
                folder.rmdir()
        if not any(f.is_dir() for f in folders) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    stale = time.time() - _STALE_S
    left = [*_CGROUP.glob(f"{_BUDGET_PREFIX}*"), *_CGROUP.glob(f"*/{_BUDGET_PREFIX}*")]
    for folder in left:
        with contextlib.suppress(OSError):  # in use (it has a container), or gone
            if folder.stat().st_mtime < stale:
                folder.rmdir()


_BUDGET_PREFIX = "boxgym-redteam-"
"""The names of the rows' cgroups (`memory_budget`)."""
_STALE_S = 600.0
"""How old a budget left behind must be to be removed by another row's cleanup."""


# -- the grader itself fails ----------------------------------------------------------------


@contextlib.contextmanager
def grading_containers(change: Callable[[dict[str, Any]], None]) -> Iterator[list[str]]:
    """Change how every grading container (a disposable sandbox) is created, meanwhile.

    So that the change reaches the grading of the episode under test, grading sandboxes
    come fresh (never from a warm pool filled before) and graders' caches miss (a cached
    gold state would need no grading container at all). Yields the list of containers
    changed, to tell whether the fault was injected at all.
    """
    real_kwargs, real_acquire, hits = SandboxConfig.create_kwargs, SandboxPool.acquire, []

    def kwargs_(self: SandboxConfig, labels: dict[str, str], command: Any) -> Any:
        kwargs = real_kwargs(self, labels, command)
        if self.disposable:
            change(kwargs)
            hits.append(labels.get("boxgym.episode", "?"))
        return kwargs

    def acquire(pool: SandboxPool, on_take: Callable[[], None] | None = None) -> Sandbox:
        if pool.config.disposable:
            if on_take is not None:
                on_take()
            return DockerSandbox.create(
                pool.config, run=pool.run, role="grader", gate=pool.pools.gate
            )
        return real_acquire(pool, on_take)

    with (
        mock.patch.object(SandboxConfig, "create_kwargs", kwargs_),
        mock.patch.object(SandboxPool, "acquire", acquire),
        mock.patch.object(LRUCache, "get", lambda self, key: None),
    ):
        yield hits


class _GraderRaises(ScriptPolicy):
    """Submits at once, having made its environment's grader raise."""

    def start(self, task: Task, env: Any) -> None:
        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("injected: the grader crashed")

        env.grade = broken
        super().start(task, env)


class GraderFails(Fault):
    """The grader crashes, cannot boot, or dies mid-grading: infra_error, never 0 or 1."""

    how: str = "raises"

    def inject(self, ctx: Context, env_id: str, store: FaultStore) -> Finding:
        if self.how == "raises":
            return _ended(
                _run(ctx, store, env_id, "grader-raises", _GraderRaises), outcome="infra_error"
            )
        if self.how == "boot_fails":
            missing = f"boxgym/redteam-missing:{ctx.names().hexed(8)}"
            with grading_containers(lambda kw: kw.update(image=missing)) as hits:
                episode = _run(ctx, store, env_id, "grader-boot", ScriptPolicy)
        else:
            with _killed_mid_grading() as hits:
                episode = _run(ctx, store, env_id, "grader-killed", ScriptPolicy)
        found = _ended(episode, outcome="infra_error")
        if not hits:
            return Finding(f"{found.observed}; no grading container was hit", False)
        return found


_SELF_KILL = "import os, sys; sys.stdin.buffer.read(); os.kill(os.getpid(), 9)"


@contextlib.contextmanager
def _killed_mid_grading() -> Iterator[list[str]]:
    """Grading containers die once grading has begun.

    A one-shot grading container (the code families) runs a process that reads the
    staged files and is then killed; a booted one (SQL, Support) is killed from the
    host just before the first command grading runs in it.
    """
    real_create, real_exec = DockerSandbox.create.__func__, DockerSandbox.exec  # type: ignore[attr-defined]

    def create(cls: type[DockerSandbox], /, config: SandboxConfig, **kwargs: Any) -> DockerSandbox:
        box: DockerSandbox = real_create(cls, config, **kwargs)
        box.__dict__["redteam_booted"] = True
        return box

    def exec_(self: DockerSandbox, *args: Any, **kwargs: Any) -> Any:
        if self.config.disposable and self.__dict__.get("redteam_booted"):
            with contextlib.suppress(Exception):
                client().api.kill(self.container.id)
        return real_exec(self, *args, **kwargs)

    def one_shot(kwargs: dict[str, Any]) -> None:
        if kwargs["command"] != ["sleep", "infinity"]:
            kwargs["command"] = ["/usr/bin/python3", "-c", _SELF_KILL]

    with (
        grading_containers(one_shot) as hits,
        mock.patch.object(DockerSandbox, "create", classmethod(create)),
        mock.patch.object(DockerSandbox, "exec", exec_),
    ):
        yield hits


# -- the policy server misbehaves -----------------------------------------------------------


def _solver(calls: list[ToolCall]) -> Callable[[dict[str, Any]], Reply]:
    """A default reply: the next reference call, by how many tool results came back."""

    def reply(body: dict[str, Any]) -> Reply:
        done = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
        return Reply(completion(calls[min(done, len(calls) - 1)]))

    return reply


class PolicyServer(Fault):
    """The policy endpoint fails: 5xx and hangs end infra_error, 429 waits then passes."""

    how: str = "5xx"

    def inject(self, ctx: Context, env_id: str, store: FaultStore) -> Finding:
        oracle = _oracle_calls(env_id)
        with StubServer(_solver(oracle)) as stub:
            policy = self._policy(stub)
            start = time.monotonic()
            episode = _run(ctx, store, env_id, f"server-{self.how}", lambda: policy, attempts=1)
            took = time.monotonic() - start
        policy.close()
        if self.how == "429":
            found = _ended(episode, outcome="pass")
            waited = took >= 2.0 and stub.requests >= len(oracle) + 1
            return Finding(
                f"{found.observed}; waited {took:.1f}s for Retry-After", found.held and waited
            )
        found = _ended(episode, outcome="infra_error")
        bounded = took < 90
        return Finding(f"{found.observed}; gave up after {took:.0f}s", found.held and bounded)

    def _policy(self, stub: StubServer) -> OpenAIPolicy:
        if self.how == "5xx":
            stub.default = lambda body: Reply({"error": {"message": "overloaded"}}, status=503)
            return OpenAIPolicy("stub", base_url=stub.url, max_retries=2, backoff=0.05)
        if self.how == "hang":
            stub.default = lambda body: Reply({}, delay=120)
            return OpenAIPolicy("stub", base_url=stub.url, timeout=3, max_retries=1, backoff=0.05)
        stub.script = [
            Reply({"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "2"})
        ]
        return OpenAIPolicy("stub", base_url=stub.url, max_retries=2, backoff=0.01)


def _oracle_calls(env_id: str) -> list[ToolCall]:
    from gym._envs._registry import make

    env = make(env_id)
    try:
        inner: Any = env.unwrapped
        return list(inner.oracle_calls(_task(env_id)))
    finally:
        env.close()


# -- the runner process is killed, then resumed ---------------------------------------------


_KILLED_RUN = 12
"""Episodes of the killed run: it is killed at its first stored episode, and a loaded
machine may be late to see it (with 4, a CI run once saw all of them stored first)."""


class RunnerKilled(Fault):
    """``kill -9`` of a ``gym run`` mid-way, then the same command: nothing lost or doubled."""

    def inject(self, ctx: Context, env_id: str, store: FaultStore) -> Finding:
        path = store.folder / f"killed-{ctx.names().hexed(6)}.db"
        command = [
            sys.executable,
            "-c",
            "import sys; from gym._cli import main; sys.argv[0] = 'gym'; main()",
            "run",
            env_id,
            "--policy",
            "oracle",
            "--limit",
            str(_KILLED_RUN),
            "-c",
            "2",
            "--seed",
            str(ctx.rng.randrange(1 << 30)),
            "--db",
            f"sqlite:///{path}",
            "--json",
        ]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        with _child(command, **quiet) as proc:
            deadline = time.monotonic() + 300
            while _count(path) < 1 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.2)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        before = snapshot(path)
        with _child(command, **quiet) as resumed:
            code = resumed.wait(timeout=600)
        after, ids = snapshot(path), episode_ids(path)
        orphans = [
            c.id[:12]
            for c in list_boxgym()
            if c.labels.get(OWNER, "").split(":")[1:2] == [str(proc.pid)]
        ]
        states = run_states(path)
        seen = (
            f"killed after {_count_of(before)} of {_KILLED_RUN} episodes; resume exit {code}, "
            f"{len(set(ids))} episodes, run {'/'.join(states) or 'without a state'}"
        )
        held = (
            code == 0
            and 1 <= _count_of(before) < _KILLED_RUN
            and len(ids) == len(set(ids)) == _KILLED_RUN
            and not changed(before, after)
            and states == ["finished"]
            and not orphans
        )
        if orphans:
            seen += f"; the killed runner's containers remain: {orphans[:3]}"
        return Finding(seen, held)


_children: set[subprocess.Popen[bytes]] = set()
"""Processes of fault rows still running (a ``gym run``): ended when this process ends."""


@contextlib.contextmanager
def _child(command: list[str], **kwargs: Any) -> Iterator[subprocess.Popen[bytes]]:
    """A child process, killed if the block ends while it runs.

    If this process ends first (a stopped suite), the child is sent SIGTERM: no ``gym
    run`` of a fault row goes on without its suite.
    """
    proc = subprocess.Popen(command, **kwargs)
    _children.add(proc)
    try:
        yield proc
    finally:
        _children.discard(proc)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _end_children() -> None:
    for proc in list(_children):
        with contextlib.suppress(OSError):
            proc.terminate()


atexit.register(_end_children)


def _count(path: Path) -> int:
    try:
        return len(episode_ids(path))
    except sqlite3.Error:
        return 0


def _count_of(rows: dict[tuple[str, int], bytes]) -> int:
    return sum(1 for table, _ in rows if table == "episodes")


# -- the Docker daemon restarts mid-run (destructive) ---------------------------------------


def restart_engine(timeout: float = 90.0) -> None:
    """Stop dockerd with SIGTERM and start it again as scripts/engine.sh does.

    ``GYM_DOCKERD_PIDFILE`` and ``GYM_DOCKERD_COMMAND`` name another daemon (one started
    with its own data root and socket, with ``DOCKER_HOST`` pointing at it).

    Raises:
        RuntimeError: the daemon did not stop or did not answer again in time.
    """
    pid_file = Path(os.environ.get("GYM_DOCKERD_PIDFILE", "/var/run/docker.pid"))
    pid = int(pid_file.read_text().strip())
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"dockerd (pid {pid}) did not stop in {timeout:.0f}s")
        time.sleep(0.5)
    log = os.environ.get("BOXGYM_DOCKERD_LOG", "/var/log/boxgym-dockerd.log")
    command = shlex.split(os.environ.get("GYM_DOCKERD_COMMAND", "dockerd"))
    with open(log, "ab") as out:
        subprocess.Popen(
            command, stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True
        )
    while subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"dockerd did not answer again in {timeout:.0f}s")
        time.sleep(1)


class _Slow(ScriptPolicy):
    """The reference solution, one call every few seconds (so episodes are in flight)."""

    def start(self, task: Task, env: Any) -> None:
        self._queue = list(env.oracle_calls(task))

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        time.sleep(3)
        return super().act(messages, tools)


class DaemonRestart(Fault):
    """dockerd restarts mid-run: in-flight episodes infra_error, rerun fresh; finished untouched."""

    destructive = True

    def inject(self, ctx: Context, env_id: str, store: FaultStore) -> Finding:
        config = _config(
            envs=[env_id], policy="redteam-slow-oracle", limit=4, seed=ctx.rng.randrange(1 << 30)
        )
        worker = threading.Thread(
            target=run,
            kwargs={
                "config": config,
                "store": store.store,
                "policy_factory": _Slow,
                "concurrency": 2,
                "max_attempts": 1,
            },
        )
        worker.start()
        deadline = time.monotonic() + 300
        while not store.store.episodes(config.run_id) and time.monotonic() < deadline:
            time.sleep(0.5)
        finished = store.rows()
        restart_engine()
        worker.join(600)
        outcomes = [e.outcome for e in store.store.episodes(config.run_id)]
        rerun = run(
            config, store=store.store, policy_factory=_Slow, concurrency=2, retry_infra=True
        )
        final = [e.outcome for e in store.store.episodes(config.run_id)]
        untouched = not changed(finished, store.rows()) or _only_infra_replaced(finished, store)
        seen = (
            f"during the restart: {','.join(outcomes)}; "
            f"after --retry-infra: {','.join(final)} ({rerun.done} rerun)"
        )
        return Finding(seen, untouched and final == ["pass"] * 4 and "fail" not in outcomes)


def _only_infra_replaced(before: dict[tuple[str, int], bytes], store: FaultStore) -> bool:
    """Rows that changed belonged only to episodes committed as infra_error (rerun)."""
    return all(
        b'"infra_error"' in before[key] or key[0] != "episodes"
        for key in changed_keys(before, store.rows())
    )


def changed_keys(
    before: dict[tuple[str, int], bytes], after: dict[tuple[str, int], bytes]
) -> list[tuple[str, int]]:
    """Keys of rows committed before that are gone or different now."""
    return [key for key, data in before.items() if after.get(key) != data]


register(
    ContainerKilled("fault.container_killed_mid_episode", ALL, "infra_error, no reward", fast=True),
    InsideLimits(
        "fault.oom_in_grading_within_limit",
        (CODE,),
        "fail with a resource flag (not infra_error)",
        calls=_oom_in_grading,
        flag="resource_limit",
    ),
    InsideLimits(
        "fault.oom_kill_in_grading_within_limit",
        (CODE,),
        "fail with a resource flag (not infra_error)",
        calls=_oom_kill_in_grading,
        flag="resource_limit",
    ),
    HostOutOfMemory(
        "fault.host_out_of_memory_in_grading",
        (CODE,),
        "infra_error (the correct solution never fails for the host's want of memory)",
    ),
    StarvedOfCpu(
        "fault.grading_starved_of_cpu",
        (CODE,),
        "pass (a correct solution's time is its CPU, not the host's delay)",
    ),
    InsideLimits(
        "fault.oom_in_episode_within_limit",
        (CODE,),
        "fail (not infra_error)",
        calls=_oom_in_episode,
    ),
    InsideLimits(
        "fault.scratch_disk_full", (CODE,), "fail (not infra_error), no crash", calls=_disk_full
    ),
    *[
        GraderFails(f"fault.grader[{how}]", ALL, "infra_error, never 0 or 1", how=how)
        for how in ("raises", "boot_fails", "killed_mid_grading")
    ],
    *[
        PolicyServer(f"fault.policy_server[{how}]", (CODE,), expected, how=how, fast=how == "429")
        for how, expected in (
            ("5xx", "infra_error, no turn used"),
            ("429", "waits Retry-After, then pass"),
            ("hang", "infra_error within the timeouts"),
        )
    ],
    RunnerKilled(
        "fault.runner_kill_9_then_resume",
        (CODE,),
        "resume completes; no lost, changed or duplicate episode",
    ),
    DaemonRestart(
        "fault.docker_daemon_restart",
        (CODE,),
        "in-flight infra_error then rerun; finished untouched",
    ),
)
