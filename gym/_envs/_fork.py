"""`fork`: k branches of a running episode, each a fresh sandbox in the same state.

A branch is a full episode: its own sandbox, its own copy of the trajectory so far, its
own verdict when it ends, and a `Lineage` (the parent's ``episode_uid`` and the step it
was forked at). Nothing of one branch reaches another, nor the parent.

How the state travels (chosen by measurement, docs/benchmarks.md): a copy of the
writable state. An agent's sandbox writes only to its size-capped tmpfs mounts (the root
filesystem is read-only), so its state is those mounts' files and its shell's state:

1. the parent's mounts are archived as the agent's user, at most `fork_max_bytes` (by
   its container's keeper, which runs as that user, in its own process; else by
   ``tar`` in a fresh process of the sandbox), while its shell's exported variables and
   working directory are read (``declare -px``, ``$PWD``): two requests at once; the
   archive's files are summed per mount as a branch writes them (`_fits`: a sparse file
   in full), and a fork over what one mount holds is refused;
2. each branch gets a fresh sandbox from the environment's own provider, the way
   `ContainerEnv.reset` gets one (same config, same hardening, the warm pool's
   containers); in one command of its fresh shell, still the harness's own, as a reset
   writes the task's files, the archive is unpacked into its mounts as the agent's user
   and the shell state is replayed; its baseline is the parent's (the task's files), so
   its export reports every change since the task began.

Replaying the prefix's actions in fresh containers costs every step again and is not
exact (time, randomness, the network-less clock); a checkpoint of the container (CRIU)
is not available on the engine (`docker checkpoint` needs an experimental daemon).

What is not carried: processes the agent started (background jobs die with the parent's
view of them), shell variables that were not exported, shell functions, aliases and
options, extended attributes, /dev/shm, the holes of a sparse file (it is written out)
and space reserved past a file's end. A file or folder the agent made unreadable to its
own user cannot be copied: the fork is refused as the agent's state (`UnreadableState`),
never made without it. Families whose state is more than files and shell (a database
server, an API service) refuse to fork until they say how (`forkable`).
"""

from __future__ import annotations

import copy
import shlex
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from gym._core._errors import (
    ConfigError,
    ExportTooLarge,
    HeldOutError,
    SandboxError,
    SandboxUnavailable,
    UnreadableState,
)
from gym._envs._shell_state import CAPTURE, ShellState, parse, replay_lines
from gym._envs._shell_state import quote as shell_quote
from gym._grading import Export
from gym._sandbox import DockerSandbox, LazySandbox, Sandbox, SandboxConfig, quote
from gym._sandbox._keeper import LISTING_ENTRIES
from gym._sandbox._manifest import mount_sizes, mounts_bytes

if TYPE_CHECKING:
    from gym._envs._env import ContainerEnv

__all__ = ["SHELL_STATE_MAX_BYTES", "Lineage", "can_fork", "fork", "fork_max_bytes"]

_TAR_ENTRY_BYTES = 3 * 512
"""What the archive adds to each entry (`fork_max_bytes`): its header, and a GNU long
name record for a name of up to 511 bytes."""

_PAGE = 4096
"""What tmpfs charges a file's bytes in: whole pages (4 KiB, the smallest a kernel has)."""

_LINK_INLINE = 128
"""A symbolic link's target from this many bytes is kept by tmpfs in a page of the mount
(a shorter one in the inode)."""

SHELL_STATE_MAX_BYTES = 8 << 20
"""The most bytes of shell state (`gym._envs._shell_state.CAPTURE`) a fork reads: the
kernel's limit on a process's arguments and environment (a quarter of the 8 MiB stack:
2 MiB), times the widest ``printf %q`` writes a byte (``\\001``: four). Exported
variables over that limit leave no program able to start, in the parent too."""

_UNPACK = (
    "tar",
    "-x",
    "-p",
    "--no-same-owner",
    "--no-recursion",
    "--anchored",
    "--no-wildcards",
    "--delay-directory-restore",
)
"""``tar -x`` as a branch unpacks the parent's archive, as the agent's user; followed by an
``--exclude`` of each mount (the archive's entries for the mounts themselves, whose owner
and times are not the agent's to set: /tmp is root's) and ``-C`` the mounts' folder. A
folder's mode is set once what it holds is written (a folder the agent made read-only,
with files in it, could not be filled otherwise: every fork of it failed as ours)."""


class Lineage(BaseModel):
    """Where a forked episode comes from."""

    parent_id: str
    """The parent episode's ``episode_uid`` (or the id the caller stores it under)."""
    fork_step: int
    """Steps of the parent the branch shares: its first own step has this index."""
    branch: int
    """The branch's index among the k of its fork (0-based)."""


@dataclass(frozen=True)
class _State:
    """The parent's state at the fork: its mounts' archives and its shell's state."""

    archive: bytes
    """A tar of what is under the mounts, named relative to the sandbox's root."""
    shell: ShellState | None
    """The shell's directory and exported variables (None: nothing ran)."""
    started: bool
    """Whether the parent's sandbox ever ran anything (else setup's files are all)."""


def can_fork(env: ContainerEnv[Any]) -> bool:
    """Whether a family's episodes can fork: its state is its mounts' files and its shell.

    A family whose final state is a workspace `Export` (the code families: PyRepo,
    PyFunc, ...) can; any other says so with ``forkable``.
    """
    return bool(type(env).forkable) or issubclass(type(env).final_state_type, Export)


def fork_max_bytes(config: SandboxConfig, entries: int = LISTING_ENTRIES) -> int:
    """The most bytes of archive one fork of a sandbox made with ``config`` copies.

    What its writable mounts can hold (the sum of their ``size=``; a mount without a
    limit holds at most the sandbox's memory, which its files are charged to) and, for
    each of the ``entries`` an archive may have (the keeper's cap), a header and a long
    name; at most a quarter of the sandbox's memory: a branch's keeper receives the
    archive whole and holds it up to three times over (the frame, its payload, the
    shell's input) beside the files unpacked from it, all charged to the same limit (a
    340 MiB archive already ended the keeper of a 1 GiB branch, docs/training.md).

    A state over it is the agent's own doing (files the branch could not take in, a
    sparse file, names nested deeper than 511 bytes): `fork` refuses it with
    `ExportTooLarge`, which training counts as the branches' failure. So is an archive
    under it whose files are over what one mount holds (`_fits`).
    """
    held = mounts_bytes(config) + entries * _TAR_ENTRY_BYTES + 1024  # 1024: the archive's end
    return min(held, (config.memory_mb << 20) // 4)


def fork(
    env: ContainerEnv[Any], k: int, *, training: bool = False, parent_id: str | None = None
) -> list[ContainerEnv[Any]]:
    """Fork ``env`` into k independent environments in its state at this step.

    Args:
        env: an environment with an episode running.
        k: how many branches.
        training: the branches are training data: refuse a task of a held-out split.
        parent_id: the id the parent episode is stored under (its ``episode_uid`` by
            default), recorded in each branch's `Lineage`.

    Raises:
        ConfigError: no episode is running, ``k`` is under 1, or the family cannot fork.
        HeldOutError: ``training`` and the task is of a held-out split.
        ExportTooLarge: the parent's files are over `fork_max_bytes` or, as a branch
            writes them, over what one of its mounts holds (a sparse file, links with
            long targets), or its shell's exported variables over
            `SHELL_STATE_MAX_BYTES`, or some are unreadable to the agent's own user
            (`UnreadableState`): the agent's doing, a state no branch could copy.
        SandboxError: a sandbox failed (no branch is left running).
    """
    _check(env, k, training)
    began = time.monotonic()
    state = _capture(env)
    _fits(state.archive, env.sandbox_config())
    step = len(env.trace)
    lineage = [
        Lineage(parent_id=parent_id or env.episode_uid, fork_step=step, branch=i) for i in range(k)
    ]
    with ThreadPoolExecutor(max_workers=k, thread_name_prefix="gym-fork") as pool:
        futures = [pool.submit(_sandbox_for, env, state) for _ in range(k)]
        boxes, errors = [], []
        for future in futures:
            try:
                boxes.append(future.result())
            except BaseException as exc:  # every branch is released, then the first raises
                errors.append(exc)
    if errors:
        for box in boxes:
            env.sandboxes.release(box)
        raise errors[0]
    spent = time.monotonic() - began
    branches = [_branch(env, box, line, spent) for box, line in zip(boxes, lineage, strict=True)]
    env.exclude_wait(spent)  # the fork's time is the harness's, in the parent too
    return branches


def _check(env: ContainerEnv[Any], k: int, training: bool) -> None:
    name = type(env).__name__
    if env.done or env.sandbox is None or env.task is None:
        raise ConfigError(f"{name}: no episode is running to fork: call reset() and step first")
    if k < 1:
        raise ConfigError(f"fork(k) needs k >= 1 branches, not {k}")
    if not can_fork(env):
        raise ConfigError(
            f"{name} ({env.env_id}) cannot fork yet: its state is more than the files of its "
            "mounts and its shell (a database or an API service), which fork does not copy; "
            "fork a code family (PyRepo, PyFunc) or one whose class sets forkable = True"
        )
    task = env.task
    if training and type(env).splits.get(task.split) != "training":
        raise HeldOutError(
            f"{env.env_id}: task {task.id} is of the held-out split {task.split!r}; its "
            "branches would be training data, and held-out splits are for evaluation only"
        )


def _capture(env: ContainerEnv[Any]) -> _State:
    """The parent's state: its mounts' archive and its shell's state, read at once."""
    box = env.sandbox
    assert box is not None
    if isinstance(box, LazySandbox) and not box.started:
        return _State(archive=b"", shell=None, started=False)
    root = _root(box, env.sandbox_config())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gym-fork-tar") as pool:
        archive = pool.submit(_archive, box, root)
        shell = box.run(CAPTURE, timeout=30, max_output=SHELL_STATE_MAX_BYTES)
        raw = archive.result()
    if shell.stdout_truncated:
        raise ExportTooLarge(
            f"the shell's exported variables are over {SHELL_STATE_MAX_BYTES >> 20} MiB as "
            "printf %q writes them: this episode cannot fork"
        )
    if not shell.ok:  # its builtins disabled or shadowed: nothing else fails `CAPTURE`
        why = "timed out" if shell.timed_out else f"exit code {shell.exit_code}"
        raise UnreadableState(
            f"the agent's shell did not print its directory and exported variables ({why}): "
            "this episode cannot fork (before: its branches got an empty environment)"
        )
    return _State(archive=raw, shell=parse(shell.stdout), started=True)


def _root(box: Sandbox, config: SandboxConfig) -> str:
    """The folder a sandbox's mounts are under, as the config names them.

    ``/`` in a container; a local stand-in's temporary folder.

    Raises:
        SandboxError: the sandbox's mounts are not the config's under one folder.
    """
    if len(box.config.tmpfs) != len(config.tmpfs):
        raise SandboxError(f"sandbox {box.id}: its mounts are not its config's; it cannot fork")
    pairs = zip(box.config.tmpfs, config.tmpfs, strict=True)
    roots = {ours.removesuffix(mount) for ours, mount in pairs}
    if len(roots) != 1:
        raise SandboxError(f"sandbox {box.id}: its mounts are not its config's; it cannot fork")
    return roots.pop() or "/"


def _unlazy(box: Sandbox) -> Sandbox:
    """The sandbox a lazy one stands for (itself if it is not lazy)."""
    return box.inner() if isinstance(box, LazySandbox) else box


def _mounts(box: Sandbox, root: str) -> list[str]:
    """The sandbox's mounts, relative to the folder they are under."""
    return [m.removeprefix(root).lstrip("/") for m in box.config.tmpfs]


def _archive(box: Sandbox, root: str) -> bytes:
    """A tar of what is under the parent's mounts, read as the agent's user.

    Made by the container's keeper (one round trip, no process; the keeper runs as the
    agent's user), else by ``tar`` in a fresh process of the sandbox.
    """
    inner = _unlazy(box)
    cap = fork_max_bytes(box.config)
    too_large = (
        f"the files under {', '.join(box.config.tmpfs)} are over the fork cap "
        f"({cap} bytes, or {LISTING_ENTRIES} entries): this episode cannot fork"
    )
    if isinstance(inner, DockerSandbox) and inner.keeper is not None:
        if inner.closed:
            raise SandboxUnavailable(f"sandbox {inner.id} was closed: it cannot fork")
        deadline = time.monotonic() + 120
        try:
            return inner.keeper.archive(root, _mounts(inner, root), deadline, cap)
        except UnreadableState:
            raise
        except ExportTooLarge as exc:
            raise ExportTooLarge(too_large) from exc
    argv = ["tar", "-c", "--ignore-failed-read", "-C", root, "--", *_mounts(box, root)]
    result, raw = box._exec(argv, 120, max_output=cap + 1)
    if result.stdout_truncated or len(raw) > cap:
        raise ExportTooLarge(too_large)
    if result.timed_out or result.exit_code not in (0, 1):  # 1: a file changed as it was read
        box.ensure_running()
        raise SandboxError(f"could not archive the files to fork: {result.stderr.strip()[:300]}")
    return raw


def _fits(archive: bytes, config: SandboxConfig) -> None:
    """Refuse an archive a branch's mounts cannot take in, before any branch unpacks it.

    Each regular file's bytes, in whole pages, are summed per mount it lands in (the
    longest of the config's mounts its name is under; a link to a file already in the
    archive costs nothing, a symbolic link a page where its target is long); a mount's
    sum over its ``size=`` (`mount_sizes`) can only come of a sparse file, which the
    parent holds in few pages and the archive carries in full: the agent's state.
    Within them a branch holds what the parent held, so an unpack that still fails is
    ours (`SandboxError`). ``archive`` is named relative to the folder the mounts are
    under, as ``config`` names them.

    Raises:
        ExportTooLarge: a mount's files, written out, would be over what it holds.
        SandboxError: the archive cannot be read (it is the harness's own).
    """
    if not archive.strip(b"\0"):
        return
    limits = {m.strip("/"): size for m, size in mount_sizes(config).items()}
    deepest = sorted(limits, key=len, reverse=True)
    used = dict.fromkeys(limits, 0)
    for name, size in _files(archive):
        mount = next((m for m in deepest if name.startswith(f"{m}/" if m else "")), None)
        if mount is not None:
            used[mount] += -(-size // _PAGE) * _PAGE
    for mount, size in used.items():
        if size > -(-limits[mount] // _PAGE) * _PAGE:
            raise ExportTooLarge(
                f"the files under /{mount} are {size} bytes written out (a sparse file in "
                f"full), over the {limits[mount]} its mount holds: this episode cannot fork"
            )


def _files(archive: bytes) -> Iterator[tuple[str, int]]:
    """Each regular file of a tar archive: its name and the bytes ``tar -x`` writes of it.

    A symbolic link whose target tmpfs keeps in a page comes as one byte (a page).

    Only the headers are read (``tarfile``, which checks and decodes each, took 3.7 s
    over the 100,000 entries an archive may have, this 0.5 s): the GNU format the keeper
    and ``tar`` write, its long names (``L``), POSIX ``ustar`` prefixes and pax ``path``
    and ``size``; a GNU sparse member (``S``) writes only the data it carries.

    Raises:
        SandboxError: a header's size is not a number (the archive is the harness's own).
    """
    pos, name, size, target = 0, b"", -1, b""  # from the records before a header
    while pos + 512 <= len(archive):
        header = archive[pos : pos + 512]
        if not header.strip(b"\0"):
            return
        kind, field = header[156:157], header[124:136]
        try:
            stored = (
                int.from_bytes(field[1:], "big")
                if field[0] & 0x80  # GNU base-256
                else int(field.strip(b" \0") or b"0", 8)
            )
        except ValueError:
            raise SandboxError("could not read the parent's archive to fork it") from None
        if kind not in (b"L", b"K", b"x", b"g") and size >= 0:
            stored = size  # pax's size is the member's
        data = archive[pos + 512 : pos + 512 + stored] if kind in (b"L", b"K", b"x") else b""
        pos += 512 + (
            0 if kind in (b"1", b"2", b"3", b"4", b"5", b"6") else -(-stored // 512) * 512
        )
        if kind == b"L":
            name = data.split(b"\0", 1)[0]
        elif kind == b"K":  # a target of over 100 bytes (the header holds 100)
            target = data.split(b"\0", 1)[0]
        elif kind == b"x":
            name, size = _pax(data, name, size)
        elif kind != b"g":
            if not name:
                name = header[:100].split(b"\0", 1)[0]
                if header[257:263] == b"ustar\0" and header[345]:
                    name = header[345:500].split(b"\0", 1)[0] + b"/" + name
            if kind in (b"0", b"\0", b"7", b"S"):
                yield name.decode(errors="surrogateescape"), stored
            elif kind == b"2" and len(target) >= _LINK_INLINE:
                yield name.decode(errors="surrogateescape"), 1  # its target in a page
            name, size, target = b"", -1, b""


def _pax(data: bytes, name: bytes, size: int) -> tuple[bytes, int]:
    """A pax header's ``path`` and ``size`` (``LEN key=value`` records), else the given."""
    while data:
        length, _, rest = data.partition(b" ")
        if not length.isdigit() or int(length) <= len(length):
            break
        key, _, value = rest[: int(length) - len(length) - 2].partition(b"=")
        data = data[int(length) :]
        if key == b"path":
            name = value
        elif key == b"size" and value.isdigit():
            size = int(value)
    return name, size


def _sandbox_for(env: ContainerEnv[Any], state: _State) -> Sandbox:
    """A fresh sandbox from the environment's provider, in the parent's state."""
    assert env.task is not None and env.sandbox is not None
    box = env.sandboxes.acquire(env.sandbox_config(), run=env.run_label, role="agent")
    try:
        if not state.started:  # nothing ran: the task's files, as a reset writes them
            env.setup(env.task, box)
            return box
        box.baseline = env.sandbox.baseline
        _restore(box, state, env.sandbox.config, env.sandbox_config())
    except BaseException:
        env.sandboxes.release(box)
        raise
    return box


def _restore(box: Sandbox, state: _State, parent: SandboxConfig, config: SandboxConfig) -> None:
    """Unpack the parent's archive into the branch's mounts and replay its shell state.

    In a container one command of the branch's fresh shell does both (`_seed`); a local
    stand-in unpacks in a fresh process, then replays. ``parent`` is the parent
    sandbox's config, ``config`` the environment's (the mounts as it names them).
    """
    inner = _unlazy(box)
    replay = _replay(state, parent, inner.config)
    root = _root(inner, config)
    if not state.archive.strip(b"\0"):
        inner.run(replay, timeout=30)
    elif isinstance(inner, DockerSandbox):
        _seed(inner, state.archive, root, replay)
    else:
        _unpack(inner, state.archive, root)
        inner.run(replay, timeout=30)


def _replay(state: _State, parent: SandboxConfig, ours: SandboxConfig) -> str:
    """Bash text that sets the parent's exported variables and directory in a branch's shell.

    Variables the fresh shell exports and the parent's did not are unset. The directory
    is mapped from the parent's mounts to the branch's (the same paths in containers) and
    entered first, then ``OLDPWD`` made exported and unset as in a fresh shell, then the
    parent's variables given (its ``OLDPWD`` and ``PWD`` among them: before, the ``cd``
    came last and set the branch's ``OLDPWD`` to the parent's directory).
    """
    assert state.shell is not None
    lines = ["builtin unset -v $(builtin compgen -e)"]
    if state.shell.cwd:
        at = f"__boxgym_cwd_{uuid.uuid4().hex}"  # no variable of the parent's is named so
        lines.append(f"{at}={shell_quote(state.shell.cwd)}")
        for theirs, mine in zip(parent.tmpfs, ours.tmpfs, strict=True):
            if theirs != mine:  # a local stand-in's folders: each sandbox has its own
                was, now = quote(theirs), quote(mine)
                lines.append(f'case "${at}" in {was}|{was}/*) {at}={now}"${{{at}#{was}}}";; esac')
        lines.append(f'builtin cd -- "${at}"; builtin unset -v {at}')
    lines += ["builtin unset -v OLDPWD; builtin declare -x OLDPWD", *replay_lines(state.shell)]
    return "{\n" + "\n".join(lines) + "\n} 2>/dev/null"


def _seed(box: DockerSandbox, archive: bytes, root: str, replay: str) -> None:
    """Unpack and replay in one command of the branch's fresh shell (one round trip).

    The shell is still the harness's own (the branch's sandbox was just acquired), as
    when a reset writes the task's files through it: ``head`` reads the archive that
    follows the line, ``tar`` unpacks it as the shell's user (the agent's), and only
    then is the parent's state replayed: its text follows the archive, read by ``head``
    too (bash reads its own line a byte at a time: 7 MiB of exported variables in it
    took 30 s), and ``eval``-ed with its input closed. The token, printed before the
    replay runs, says the unpack succeeded: nothing the replay prints can.
    """
    token = f"__boxgym_unpacked_{uuid.uuid4().hex}"
    excludes = " ".join(f"--exclude={shlex.quote(m)}" for m in _mounts(box, root))
    unpack = f"head -c {len(archive)} | {shlex.join(_UNPACK)} {excludes} -C {shlex.quote(root)}"
    code = replay.encode()
    script = (
        f"if {unpack}; then printf '%s\\n' {token}; eval \"$(head -c {len(code)})\" </dev/null; "
        f"else head -c {len(code)} >/dev/null; fi"
    )
    result = box.shell.run_script(script, data=archive + code, timeout=120)
    if not result.stdout.startswith(token):
        box.ensure_running()
        why = result.stderr.strip()[:300] or f"exit status {result.exit_code}"
        raise SandboxError(f"could not unpack the parent's files: {why}")


def _unpack(box: Sandbox, archive: bytes, root: str) -> None:
    """Unpack the parent's archive into the branch's mounts, in a fresh process."""
    excludes = [f"--exclude={m}" for m in _mounts(box, root)]
    result = box.exec([*_UNPACK, *excludes, "-C", root], stdin=archive, timeout=120)
    if not result.ok:
        box.ensure_running()
        raise SandboxError(f"could not unpack the parent's files: {result.stderr.strip()[:300]}")


def _branch(
    env: ContainerEnv[Any], box: Sandbox, lineage: Lineage, spent: float
) -> ContainerEnv[Any]:
    """An environment like ``env`` (same task, trajectory, budgets) on the branch's sandbox.

    Its clock is the parent's, less the seconds the fork took.
    """
    assert env.task is not None
    branch = copy.copy(env)
    branch.sandbox = box
    branch.trace = [record.model_copy(deep=True) for record in env.trace]
    branch.user_transcript = copy.deepcopy(env.user_transcript)
    branch.user = copy.deepcopy(env.user)
    branch.verdict, branch.final_state, branch.final_call = None, None, None
    branch.action_space = copy.deepcopy(env.action_space)
    branch._np_random = copy.deepcopy(env._np_random)
    branch._use_tools(env.task)  # the tools bound to the branch, not the parent
    branch._started = env._started + spent
    branch.deadline = None if env.deadline is None else env.deadline + spent
    branch.episode_uid = uuid.uuid4().hex
    branch.lineage = lineage
    return branch
