"""Fail-to-infra rows: what an agent (or its model's server) produces never ends as a fault.

Provenance decides ``infra_error``: an episode is one only when a fault is observed
outside the sandbox and not caused by what the judged side produced. Each row here
takes one thing an agent can produce without limit and checks the class, with fresh
random names, sizes and tools on every run:

- ``infra.deep_action_is_a_clean_error``: actions nested 100,000 levels deep (arguments
  as a deep object, as deep JSON text, as nested arrays, the whole call as deep text),
  given to ``env.step`` directly, and the same from a model's server through the policy
  (a native call, a tagged call in the text, bare JSON, a body nested past reading, a
  whitespace run no pattern may backtrack over, fields of the wrong type): each is an
  invalid call the agent reads as an error, the episode goes on and ends graded, and it
  is committed, exported and shown like any other.
- ``infra.state_over_listing_cap[...]``: the correct work, plus more files than the
  final listing may hold (long paths, many entries): the agent's ``fail`` with
  ``export_too_large``, never ``infra_error``; or, where the kernel's bound on a
  tmpfs's inodes refuses the files first (100,000 entries are past what the default
  mounts hold), the correct work graded ``pass``.
- ``infra.names_read_as_one``: the correct work, plus a small file whose name is not
  UTF-8 and a sparse terabyte named as it reads with U+FFFD, in the allowed folder: the
  listing never reads either by that name, so the correct work passes (before: the size
  of one and the archive of the other, read to the timeout: ``infra_error``).
- ``copy_out.unreadable_changes``: the correct work made unreadable to the agent (every
  file it changed, ``chmod 000``): ``fail`` with ``symlink_planted``, never the pristine
  files graded as if they were what the agent left.
- ``infra.many_allowed_files_are_exported``: the correct work, plus 1,500 files of long
  names and 2 KiB each where the task allows writing: their names no longer fit one
  command line, their archive is several times the keeper's backlog, and the export
  still reads them all, whole (the episode passes; it was ``infra_error``, and once an
  archive cut short).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gym._core._models import Task
from gym._core._tools import ToolCall
from gym._redteam._core import Attack, Context, Finding, Names, register
from gym._redteam._episode import AnyTask, Expect, bash

__all__ = ["DeepAction", "many_allowed_files", "over_listing_cap"]

CODE = ("boxgym/PyFunc-v0", "boxgym/PyRepo-v0", "boxgym/HumanEval-v0", "boxgym/MBPP-v0")
EVERY = (*CODE, "boxgym/SQL-v0", "boxgym/Support-v0")


def _deep_object(depth: int, key: str) -> dict[str, Any]:
    top: dict[str, Any] = {}
    here = top
    for _ in range(depth):
        here[key] = {}
        here = here[key]
    return top


def _deep_array(depth: int) -> list[Any]:
    top: list[Any] = []
    here = top
    for _ in range(depth):
        here.append([])
        here = here[0]
    return top


def _deep_text(depth: int, key: str) -> str:
    return f'{{"{key}":' * depth + "1" + "}" * depth


class DeepAction(Attack):
    """Actions nested 100,000 levels deep, from the API and from a model's server."""

    name = "infra.deep_action_is_a_clean_error"
    envs = EVERY
    expected = "every deep action an error the agent reads; episode graded fail, stored, shown"

    def run(self, ctx: Context, env_id: str) -> Finding:
        """Both halves; the first that does not hold is the finding."""
        names = ctx.names()
        direct = self._direct(ctx, env_id, names)
        if not direct.held:
            return direct
        served = self._served(ctx, env_id, names)
        return Finding(f"{direct.observed}; {served.observed}", served.held)

    # -- env.step, given the deep actions as Python values and as text -----------------------

    def _direct(self, ctx: Context, env_id: str, names: Names) -> Finding:
        from gym._envs._registry import make

        env = make(env_id, run=ctx.label, **ctx.env_kwargs)
        try:
            inner: Any = env.unwrapped
            task = names.rng.choice(inner.tasks)
            env.reset(options={"task": task.id})
            tool = _some_tool(inner, names)
            depth, key = 100_000 + names.rng.randrange(1000), names.ident()
            forms = {
                "object": {"name": tool, "arguments": {key: _deep_object(depth, key)}},
                "json text": {"name": tool, "arguments": _deep_text(depth, key)},
                "arrays": {"name": tool, "arguments": {key: _deep_array(depth)}},
                "whole text": f'{{"name": "{tool}", "arguments": {_deep_text(depth, key)}}}',
            }
            for form, action in forms.items():
                obs, _, terminated, truncated, info = env.step(action)
                if not obs.startswith("Error:") or terminated or truncated or "error" not in info:
                    return Finding(f"the deep {form} gave {obs[:120]!r}", False)
            if len(inner.trace) != len(forms) or any(r.call is not None for r in inner.trace):
                return Finding(f"the trace holds {len(inner.trace)} records, not 4 rejected", False)
            size = max(_kept_size(r.raw_action) for r in inner.trace)
            if size > _KEPT:
                return Finding(f"a rejected action was kept as {size} characters", False)
            samples = inner.sample_calls()
            if samples:
                obs, *_ = env.step(samples[0])
                if obs.startswith("Error:"):
                    return Finding(
                        f"after the deep actions a plain call failed: {obs[:120]}", False
                    )
            return Finding(f"4 deep actions ({tool}) refused, records <= {size} chars", True)
        finally:
            env.close()

    # -- the same from a model's server, through the runner, the store, export and view ------

    def _served(self, ctx: Context, env_id: str, names: Names) -> Finding:
        from gym._envs._registry import tasks_of
        from gym._reports._records import write_records
        from gym._run._runner import RunConfig, run
        from gym._store import Store
        from gym._view._site import Site, write_site

        task = names.rng.choice(tasks_of(env_id))
        folder = Path(tempfile.mkdtemp(prefix="boxgym-redteam-infra-"))
        try:
            store = Store(f"sqlite:///{folder / 'runs.db'}")
            config = RunConfig(
                envs=[env_id],
                policy="redteam-deep-server",
                policy_params={"nonce": names.hexed()},
                tasks=[task.id],
                label=f"{ctx.label} deep",
                runtime=os.environ.get("GYM_RUNTIME") or None,
            )
            with _served_policy(env_id, names) as (factory, answers):
                start = time.monotonic()
                run(config, store=store, policy_factory=factory, concurrency=1, max_attempts=1)
                took = time.monotonic() - start
            (episode,) = store.episodes(config.run_id)
            steps = store.steps(episode.id)
            shown = write_records(store, config.run_id, folder / "records.jsonl", allow_eval=True)
            pages = write_site(Site(store, [config.run_id]), folder / "site")
            store.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        seen = f"served: committed {episode.outcome} after {len(steps)} steps in {took:.0f}s"
        errors = [s for s in steps[:-1] if s.observation.startswith("Error:")]
        if episode.outcome != "fail" or episode.reward != 0.0:
            return Finding(f"{seen} ({episode.end_reason[:160]})", False)
        if len(errors) != answers or len(steps) != answers + 1:
            return Finding(f"{seen}; {len(errors)} of {answers} hostile turns were errors", False)
        return Finding(f"{seen}; exported {shown}, {pages} pages", shown == 1 and pages > 0)


_KEPT = 70_000
"""Characters of a rejected action's record, at most (64 KiB and a note)."""


def _kept_size(raw: Any) -> int:
    """Characters a rejected action's record holds (its text, or its JSON)."""
    return len(raw) if isinstance(raw, str) else len(json.dumps(raw))


def _some_tool(inner: Any, names: Names) -> str:
    """A random tool of the environment that does not end the episode."""
    tools = sorted(name for name, (spec, _) in inner.tools.items() if spec.kind != "final")
    return str(names.rng.choice(tools))


def _tools_of(env_id: str) -> tuple[list[str], str]:
    """The environment's tools that do not end an episode, and its final tool."""
    from gym._envs._registry import make

    env = make(env_id)
    try:
        inner: Any = env.unwrapped
        kinds = {name: spec.kind for name, (spec, _) in inner.tools.items()}
    finally:
        env.close()
    final = next(name for name, kind in kinds.items() if kind == "final")
    return sorted(name for name, kind in kinds.items() if kind != "final"), final


@contextlib.contextmanager
def _served_policy(env_id: str, names: Names) -> Iterator[tuple[Callable[[], Any], int]]:
    """An OpenAI policy whose server (in process) answers with hostile bodies, then submits.

    Yields the policy factory and how many answers become turns before the final call.
    """
    import httpx

    from gym._policy import OpenAIPolicy

    depth, key = 100_000 + names.rng.randrange(1000), names.ident()
    tools, final_tool = _tools_of(env_id)
    tool = names.rng.choice(tools)
    deep = _deep_text(depth, key)

    def message(**fields: Any) -> bytes:
        body = {"choices": [{"index": 0, "message": {"role": "assistant", **fields}}]}
        return json.dumps(body).encode()

    def native(arguments: str, name: str = tool) -> bytes:
        function = {"name": name, "arguments": arguments}
        call = {"id": f"call_{names.hexed(8)}", "type": "function", "function": function}
        return message(content=None, tool_calls=[call])

    turns = [
        native(deep),
        native(f'{{"{key}": ' + "[" * depth + "]" * depth + "}"),
        message(content=f'<tool_call>{{"name": "{tool}", "arguments": {deep}}}</tool_call>'),
        message(content=f'{{"name": "{tool}", "arguments": {deep}}}'),
        message(content="<tool_call>" + names.ident() + " " * 300_000 + names.ident()),
        message(content=names.ident(), tool_calls={"function": {"name": tool}}),
    ]
    unreadable = [  # a retry each, never a turn
        b'{"choices": ' + b"[" * depth + b"]" * depth + b"}",
        b'{"choices": [{"message": {"role": "assistant", "content": NaN}}]}',
    ]
    final = native("{}", final_tool)
    queue = [unreadable[0], *turns[:3], unreadable[1], *turns[3:], final]

    def answer(request: httpx.Request) -> httpx.Response:
        body = queue.pop(0) if queue else final
        return httpx.Response(200, content=body)

    policy = OpenAIPolicy(
        "redteam-hostile",
        transport=httpx.MockTransport(answer),
        max_retries=3,
        backoff=0.01,
    )
    try:
        yield (lambda: policy), len(turns)
    finally:
        policy.close()


# -- the agent's state over the final listing's cap ----------------------------------------


def over_listing_cap(kind: str) -> Callable[[Names, Task, Any], list[ToolCall]]:
    """The reference solution, after leaving more files in /tmp than a listing may hold.

    ``long_paths``: about 10,000 empty files under a path of some 3,800 characters
    (over the listing's bytes); ``many_entries``: over 100,000 empty files (over its
    entries). Folder and file names are drawn anew each run.
    """

    def script(names: Names, task: Task, env: Any) -> list[ToolCall]:
        folder = names.ident()
        prefix = names.ident()
        if kind == "long_paths":
            segment = (names.ident() * 32)[:246]
            count = 10_000 + names.rng.randrange(500)
            walk = f"for i in $(seq 15); do mkdir {segment}$i && cd {segment}$i; done && "
        else:
            count = 101_000 + names.rng.randrange(5000)
            walk = ""
        names.notes["made"] = str(count)
        make = (
            f"mkdir /tmp/{folder} && cd /tmp/{folder} && {walk}"
            f"seq {count} | sed 's/^/{prefix}/' | xargs touch && ls | wc -l"
        )
        return [bash(make), *env.oracle_calls(task)[:-1]]

    return script


def many_allowed_files(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """The reference solution, plus some 1,500 files of long names where the task allows.

    Their paths together are far more than one command-line argument may hold (128 KiB),
    and their archive (2 KiB of content each, about 6 MB) is several times what the
    keeper holds for the harness at once: the export must still read them all, whole.
    """
    folder = f"/workspace/{_allowed_folder(task)}/{names.ident()}"
    prefix = (names.ident() * 24)[:180]
    count = 1500 + names.rng.randrange(200)
    names.notes["made"] = str(count)
    make = (
        f"mkdir -p {folder} && cd {folder} && head -c {count * 2048} /dev/urandom "
        f"| split -b 2048 -a 4 -d - {prefix} && ls | wc -l"
    )
    return [bash(make), *env.oracle_calls(task)[:-1]]


def names_read_as_one(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """The reference solution, plus two files whose names a listing may read as one.

    In the allowed folder: a small file whose name is not UTF-8 (one byte that is not),
    and a sparse terabyte named the same with U+FFFD where that byte is: text read with
    U+FFFD gives both one path. Neither is a file of the task.
    """
    folder = f"/workspace/{_allowed_folder(task)}"
    stem = names.ident()
    odd = f"$(printf '{stem}\\{names.rng.randrange(0o200, 0o377):o}.py')"
    make = f"cd {folder} && printf 'x\\n' > \"{odd}\" && truncate -s 1T '{stem}\ufffd.py'"
    return [*env.oracle_calls(task)[:-1], bash(make + " && ls | grep -c ^" + stem)]


def unreadable_changes(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """The reference solution, then every file it changed made unreadable to the agent.

    tar, as the agent's uid, leaves them out: graded as the pristine files, the work was
    not what the agent left; they are changes never applied (where a file of the task
    was: ``symlink_planted``, which gates).
    """
    mark = f"/tmp/{names.ident()}"
    after = f"find /workspace -type f -newer {mark} -exec chmod 000 {{}} + && echo made"
    return [bash(f"touch {mark} && sleep 1"), *env.oracle_calls(task)[:-1], bash(after)]


def _over_cap_or_refused(ctx: Context, names: Names, result: Any, policy: Any) -> Finding:
    """Whether the episode ended as its files allow.

    Made past the cap: ``fail`` with ``export_too_large``. Refused by the kernel's inode
    bound before they were all made: the correct work graded ``pass``.
    """
    made = _made(ctx, names, result, policy)
    verdict = result.verdict
    flags = {f.name for f in verdict.flags} if verdict is not None else set()
    outcome = verdict.outcome if verdict is not None else "none"
    if made.held:
        held = outcome == "fail" and "export_too_large" in flags
        return Finding(f"{made.observed}: {outcome}, flags {sorted(flags)}", held)
    refused = outcome == "pass"
    return Finding(f"the files were refused (inode bound): {outcome}", refused)


def _made(ctx: Context, names: Names, result: Any, policy: Any) -> Finding:
    """Whether the script made all it meant to (its first command counts them).

    Files by default; ``notes["what"]`` names anything else (processes).
    """
    what = names.notes.get("what", "files")
    said = result.steps[0].observation.split() if result.steps else []
    made = bool(said) and said[0] == names.notes.get("made")
    return Finding(
        f"{names.notes.get('made')} {what} made" if made else f"the {what} were not made", made
    )


def _allowed_folder(task: Task) -> str:
    """A folder the task lets the agent write anything under ('' when none)."""
    for pattern in task.allowed_paths:
        head, sep, _ = pattern.partition("/**")
        if sep and head and not any(c in head for c in "*?["):
            return head
    return ""


_KEEPER_REACH = """
import ctypes, os, platform, resource
said = []
def tried(label, call):
    try:
        call()
        said.append(label + "=done")
    except OSError as exc:
        said.append(label + "=" + str(exc.errno))
for limit in {limits}:
    tried(limit, lambda limit=limit: resource.prlimit(1, getattr(resource, limit), (0, 0)))
tried("nice", lambda: os.setpriority(os.PRIO_PROCESS, 1, 19))
tried("nice_of_group", lambda: os.setpriority(os.PRIO_PGRP, os.getpgid(1), 19))
tried("nice_of_user", lambda: os.setpriority(os.PRIO_USER, 0, 19))
tried("idle", lambda: os.sched_setscheduler(1, os.SCHED_IDLE, os.sched_param(0)))
libc = ctypes.CDLL(None, use_errno=True)
def io_idle(which, who):
    number = {{"x86_64": 251, "aarch64": 30}}[platform.machine()]
    if libc.syscall(number, which, who, 3 << 13) != 0:
        raise OSError(ctypes.get_errno(), "ioprio_set")
tried("io_idle", lambda: io_idle(1, 1))
tried("io_idle_of_user", lambda: io_idle(3, os.getuid()))
print({mark!r}, os.getuid() == os.stat("/proc/1").st_uid, " ".join(said))
"""
_LIMITS = (
    "RLIMIT_NOFILE",
    "RLIMIT_NPROC",
    "RLIMIT_AS",
    "RLIMIT_CPU",
    "RLIMIT_FSIZE",
    "RLIMIT_DATA",
)


def keeper_reached(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Its keeper's limits lowered and its scheduling made idle, by every call there is.

    The keeper (pid 1) runs as the agent's uid, and the kernel lets a process change the
    limits, priority and scheduling class of any process of its uid. Then a wrong answer.
    """
    limits = list(_LIMITS)
    names.rng.shuffle(limits)
    names.notes["mark"] = mark = names.ident()
    program, end = _KEEPER_REACH.format(limits=tuple(limits), mark=mark), names.ident()
    return [bash(f"python3 - <<'{end}'\n{program}{end}")]


def _keeper_untouched(ctx: Context, names: Names, result: Any, policy: Any) -> Finding:
    """Every attempt on the keeper refused (EPERM), and it ran as the agent's uid."""
    lines = result.steps[0].observation.splitlines() if result.steps else []
    mark = str(names.notes.get("mark"))
    said: list[str] = next((ln.split() for ln in lines if ln.startswith(mark + " ")), [])
    if len(said) < 3:
        return Finding("the attempts did not run", False)
    done = [word for word in said[2:] if not word.endswith("=1")]
    same_uid = said[1] == "True"
    if done:
        return Finding("not refused: " + " ".join(done), False)
    return Finding(f"{len(said) - 2} attempts refused (keeper of the same uid: {same_uid})", True)


def keeper_out_of_memory(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Its container's memory filled where no process's resident memory counts it.

    A small process set back to ``oom_score_adj`` 0 (the keeper sets the agent's to 1000;
    any process may lower its own to its floor) holds a memfd filled past the container's
    memory limit: the kernel kills the largest process left, the keeper. Then a wrong
    answer (never sent: the container is gone).
    """
    holder = names.ident()
    fill = (
        "echo 0 > /proc/self/oom_score_adj; "
        f'python3 -c \'import os; fd = os.memfd_create("{holder}", 0); os.dup2(fd, 3); '
        'os.execvp("sleep", ["sleep", "600"])\' & sleep 0.5; '
        "head -c 4000M /dev/zero > /proc/$!/fd/3; echo filled $?"
    )
    return [bash(fill), bash("echo after")]


def busy_at_export(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """The reference solution, with CPU-bound processes left running to the end.

    Four busy loops, detached (``setsid``) and deaf to TERM, HUP and INT, started first:
    the agent's container is busy while the harness freezes and lists its state. The
    first command counts them (by an argument of theirs named anew each run).
    """
    mark = names.ident()
    loop = "trap '' TERM HUP INT; while :; do :; done"
    start = (
        f'M={mark}_; for i in 1 2 3 4; do setsid sh -c "{loop}" sh "$M$i" '
        "</dev/null >/dev/null 2>&1 & done; sleep 0.5; "
        f"grep -l '{mark}_[0-9]' /proc/[0-9]*/cmdline 2>/dev/null | wc -l"
    )
    names.notes["made"], names.notes["what"] = "4", "busy processes"
    return [bash(start), *env.oracle_calls(task)[:-1]]


register(
    DeepAction(),
    AnyTask(
        name="infra.keeper_killed_at_memory_limit",
        envs=(*CODE, "boxgym/Shell-v0"),
        script=keeper_out_of_memory,
        expect=Expect(flags=frozenset({"resource_limit"})),
        note="memory filled outside any process's resident memory until the kernel kills "
        "the keeper: the agent's fail (resource_limit, the engine's record), never infra",
    ),
    AnyTask(
        name="infra.keeper_reached_by_its_uid",
        envs=(*CODE, "boxgym/Shell-v0"),
        script=keeper_reached,
        observers=(_keeper_untouched,),
        note="the keeper's limits lowered and its scheduling idled by the agent's uid, "
        "then a wrong answer: fail (and every attempt refused), never infra",
    ),
    *[
        AnyTask(
            name=f"infra.state_over_listing_cap[{kind}]",
            envs=CODE,
            script=over_listing_cap(kind),
            expect=Expect(outcomes=frozenset({"pass", "fail"})),
            observers=(_over_cap_or_refused,),
            note="correct work plus files past the final listing's cap: fail, not infra "
            "(or refused by the inode bound: pass)",
        )
        for kind in ("long_paths", "many_entries")
    ],
    AnyTask(
        name="infra.busy_at_export",
        envs=CODE,
        script=busy_at_export,
        expect=Expect(outcomes=frozenset({"pass"})),
        observers=(_made,),
        note="correct work with busy loops left running to the export: graded, not infra",
    ),
    AnyTask(
        name="infra.names_read_as_one",
        envs=("boxgym/PyRepo-v0",),
        script=names_read_as_one,
        expect=Expect(outcomes=frozenset({"pass"})),
        fits=lambda task: bool(_allowed_folder(task)),
        note="correct work plus a name that is not UTF-8 and its U+FFFD twin, a sparse "
        "terabyte: graded pass (never read by that name), not infra",
    ),
    AnyTask(
        name="copy_out.unreadable_changes",
        envs=CODE,
        script=unreadable_changes,
        expect=Expect(flags=frozenset({"symlink_planted"})),
        note="correct work made unreadable to the agent: fail with symlink_planted, never "
        "the pristine files graded",
    ),
    AnyTask(
        name="infra.many_allowed_files_are_exported",
        envs=("boxgym/PyRepo-v0",),
        script=many_allowed_files,
        expect=Expect(outcomes=frozenset({"pass"})),
        observers=(_made,),
        fits=lambda task: bool(_allowed_folder(task)),
        note="correct work plus 1,500 long-named files where allowed: graded, not infra",
    ),
)
