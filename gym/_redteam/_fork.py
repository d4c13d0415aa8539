"""The fork class row: nothing one branch of a forked episode does reaches another.

`ContainerEnv.fork` copies the parent's mounts and shell into fresh sandboxes. The row
plays one generic adversary over drawn tasks of every code environment (names drawn per
run): the parent leaves a file and exported variables (an integer and bash's own
``RANDOM``, whose text writes a file if a replay evaluates it), forks two branches; branch 0
writes a marker into every writable place it finds and changes the variable; branch 1
and the parent must still see the parent's state and nothing of branch 0's; then all
three submit and are graded apart: each must end ``fail`` (no work was done), never
``pass`` nor ``infra_error``.

`fork.refused_by_agent_state`: a state the agent makes either forks or is refused with
`ExportTooLarge`, the class step sampling (`gym.train._steps`, a layer above: its
tests drive that part) counts as K failed branches; any other error is a fault it
skips, so an agent-made state that ends in one (files a branch's keeper cannot take
in, a sparse file a branch's mount cannot hold written out) would buy the policy out
of its branches' credit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium

from gym._core._errors import GymError
from gym._envs._env import ContainerEnv, env_of
from gym._envs._fork import SHELL_STATE_MAX_BYTES, fork_max_bytes
from gym._redteam._core import Attack, Context, Finding, register
from gym._redteam._sweep import CODE_ENVS
from gym._sandbox._manifest import mount_sizes

__all__: list[str] = []

PLACES = "/workspace /tmp /var/tmp /dev/shm $HOME"
"""Where branch 0 writes its marker (whatever of them is writable)."""


@dataclass
class ForkIsolation(Attack):
    """One generic adversary, over ``draws`` tasks of one code environment per run."""

    name: str = "fork.branch_isolation"
    envs: tuple[str, ...] = CODE_ENVS
    expected: str = (
        "a branch sees its parent's state and nothing of its sibling's; every branch and "
        "the parent graded apart: fail, never pass nor infra_error"
    )
    draws: int = 4

    def run(self, ctx: Context, env_id: str) -> Finding:
        """Play the adversary on drawn tasks; the row holds when it holds on each."""
        env = _env(env_id, ctx)
        try:
            ids = [t.id for t in env.tasks]
        finally:
            env.close()
        tasks = ctx.names().rng.sample(ids, min(self.draws, len(ids)))
        seen = [_one(ctx, env_id, task_id) for task_id in tasks]
        broke = [text for text, held in seen if not held]
        observed = " | ".join(text for text, _ in seen)
        return Finding(f"broken: {' | '.join(broke)}" if broke else observed, not broke)


def _env(env_id: str, ctx: Context) -> ContainerEnv[Any]:
    kwargs: dict[str, Any] = {"run": ctx.label, **ctx.env_kwargs}
    return env_of(gymnasium.make(env_id, **kwargs))


def _bash(env: ContainerEnv[Any], command: str) -> str:
    obs, *_ = env.step({"name": "bash", "arguments": {"command": command}})
    return str(obs)


def _submit(env: ContainerEnv[Any]) -> str:
    *_, info = env.step({"name": "submit", "arguments": {}})
    return str(info["verdict"]["outcome"])


def _one(ctx: Context, env_id: str, task_id: str) -> tuple[str, bool]:
    """The adversary on one task: (what it saw, whether the row held there)."""
    rng = ctx.names().rng
    mine, leak, var, ran = (f"f{rng.getrandbits(40):x}" for _ in range(4))
    parent = _env(env_id, ctx)
    branches: list[ContainerEnv[Any]] = []
    try:
        parent.reset(options={"task": task_id})
        text = f"a[$(echo x > /tmp/{ran}; echo 0)]"  # runs if a replay evaluates it
        _bash(parent, f"echo parent > /workspace/{mine}; export V{var}=parent I{var}='{text}'")
        _bash(parent, f"declare -i I{var}; unset RANDOM; export RANDOM='{text}'")  # bash's own
        branches = parent.fork(2)
        spread = f'for d in {PLACES}; do echo x > "$d/{leak}" 2>/dev/null; done'
        _bash(branches[0], f"{spread}; export V{var}=leak")
        look = f'ls -a {PLACES} 2>/dev/null; cat /workspace/{mine}; echo "var=$V{var}"'
        look += f'; echo "int=${{I{var}@a}}:$I{var}"'
        problems = [
            f"{who} {what}"
            for who, env in (("branch 1", branches[1]), ("parent", parent))
            for what, bad in _looked(_bash(env, look), leak, ran, text).items()
            if bad
        ]
        outcomes = [_submit(e) for e in (branches[0], branches[1], parent)]
        problems += [f"graded {o}" for o in outcomes if o != "fail"]
        return f"{task_id}: {'; '.join(problems) or 'isolated, 3 fail'}", not problems
    finally:
        for env in (*branches, parent):
            env.close()


def _looked(seen: str, leak: str, ran: str, text: str) -> dict[str, bool]:
    return {
        "saw branch 0's file": leak in seen,
        "lost the parent's variable": "var=parent" not in seen,
        "lost the parent's file": "parent\n" not in seen,
        "ran a variable's text in the replay": f"\n{ran}\n" in seen,  # a name ls lists
        "lost the parent's integer variable": f"int=ix:{text}" not in seen,
    }


@dataclass
class RefusedByAgentState(Attack):
    """States the agent makes: each forks, or its fork is refused as the agent's doing."""

    name: str = "fork.refused_by_agent_state"
    envs: tuple[str, ...] = ("boxgym/PyFunc-v0",)
    expected: str = (
        "files just under the fork cap and a read-only folder with files fork; files over "
        "the cap, a sparse file under it but over its mount written out (alone, or with "
        "links whose targets take a page), files or folders unreadable to the agent, a file "
        "nested past what the kernel names or under a lease, a shell that cannot print its "
        "state or prints a command for it (a DEBUG trap, a function named builtin), an "
        "exported name reference, and exported variables over the shell state's cap are "
        "refused with "
        "ExportTooLarge (a file truncated as it is read forks) "
        "(the agent's state, which step sampling counts as K failed branches), never "
        "another error (a fault, skipped); the parent is graded"
    )

    def run(self, ctx: Context, env_id: str) -> Finding:
        """Each state on a drawn task; the row holds when each does."""
        env = _env(env_id, ctx)
        try:
            task = ctx.names().rng.choice([t.id for t in env.tasks if t.split == "train"])
            cap = fork_max_bytes(env.sandbox_config())
            mount, room = min(mount_sizes(env.sandbox_config()).items(), key=lambda m: m[1])
        finally:
            env.close()
        names = ctx.names()
        size = 1 << 17  # a variable under the kernel's limit on one string
        fill = "head -c {} /dev/zero | tee /tmp/.c > /workspace/.c"
        states = {
            "files under the cap": (fill.format((cap >> 1) - (4 << 20)), True),
            "files over the cap": (fill.format((cap >> 1) + 1), False),
            "a sparse file over its mount": (f"truncate -s {room + 1} {mount}/.s", False),
            "a sparse file and long links over its mount": (
                f"truncate -s {room - (64 << 10)} {mount}/.s && cd {mount} && for i in "
                f"$(seq 40); do ln -s {names.ident() * 20} .l$i; done",
                False,
            ),
            "a read-only folder with files": (
                f"mkdir /workspace/{names.ident()} && cd $_ && echo x > f && chmod 555 .",
                True,
            ),
            "a file unreadable to the agent": (
                f"echo x > {mount}/.u && chmod 000 {mount}/.u",
                False,
            ),
            "a folder unlistable to the agent": (
                f"mkdir {mount}/.d && echo x > {mount}/.d/f && chmod 300 {mount}/.d",
                False,
            ),
            "a file nested past what the kernel names": (
                f"mkdir -p {mount}/.n && cd $_ && for i in $(seq 25); do mkdir {'d' * 200} "
                f"&& cd {'d' * 200}; done && echo x > f",
                False,
            ),
            "a file under a lease another process holds": (
                f"echo x > {mount}/.w && python3 -c 'import fcntl, os, signal, time; "
                f'signal.signal(signal.SIGIO, signal.SIG_IGN); fd = os.open("{mount}/.w", '
                "os.O_RDONLY); fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK); "
                "time.sleep(600)' >/dev/null 2>&1 & sleep 1",
                False,
            ),
            "a file truncated and refilled while the fork reads it": (
                # read empty once listed full, it is padded by more than a frame holds
                # (before, about one fork in three: the keeper read as gone; the keeper
                # test of padding fails before every time)
                ": > /tmp/.g; setsid python3 -c 'import os\nwhile True:\n "
                'os.truncate("/tmp/.g", 0)\n '
                f'os.truncate("/tmp/.g", {min(64 << 20, cap // 4)})\' '
                "</dev/null >/dev/null 2>&1 & sleep 1",
                True,
            ),
            "a shell that cannot print its state": ("enable -n printf declare", False),
            "a DEBUG trap printing a command as the state": (
                f"trap 'echo \"x; touch /workspace/{names.ident()}\"' DEBUG",
                False,
            ),
            "a function named builtin printing a command": (
                "builtin() { if [[ $1 == printf ]]; then command printf '%s\\n' "
                f"'x; touch /workspace/{names.ident()}'; return 0; fi; "
                'command builtin "$@"; }',
                False,
            ),
            "an exported name reference whose subscript runs a command": (
                f"declare -nx R='b[$(touch /workspace/{names.ident()})0]'",
                False,
            ),
            "variables over the cap": (
                f"printf -v x '%0*d' {size} 0; for ((i = 0; i <= "
                f'{SHELL_STATE_MAX_BYTES // size}; i++)); do export V$i="$x"; done',
                False,
            ),
        }
        seen = [_state(ctx, env_id, task, way, *state) for way, state in states.items()]
        broke = [text for text, held in seen if not held]
        observed = " | ".join(text for text, _ in seen)
        return Finding(f"broken: {' | '.join(broke)}" if broke else observed, not broke)


def _state(
    ctx: Context, env_id: str, task: str, way: str, command: str, forks: bool
) -> tuple[str, bool]:
    """Fork a parent after ``command``: (what came of it, whether the row held there)."""
    parent = _env(env_id, ctx)
    branches: list[ContainerEnv[Any]] = []
    try:
        parent.reset(options={"task": task})
        _bash(parent, command)
        try:
            branches = parent.fork(1, training=True)
            got = "forked"
        except GymError as exc:
            got = type(exc).__name__
        graded = _submit(parent)
    finally:
        for env in (*branches, parent):
            env.close()
    refused = got in ("ExportTooLarge", "UnreadableState")  # the agent's state, both
    held = (got == "forked" if forks else refused) and graded != "infra_error"
    return f"{way}: {got}, parent {graded}", held


register(
    RefusedByAgentState(),
    *(
        ForkIsolation(name=f"fork.branch_isolation[{e.split('/')[-1]}]", envs=(e,))
        for e in CODE_ENVS
    ),
)
