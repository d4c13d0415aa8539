"""Attacks on the shell family, through ``bash(command)`` and ``submit(answer)`` only.

The agent's final state is read twice once its processes are gone: the keeper lists the
writable mounts (the change list), then the fixed manifest program lists /workspace
(gym/_grading/runner/tree_manifest.py) for the host to compare with the gold replay's.
Two invariants, each checked by a class row over every shipped task (names, folders
and odd characters drawn per run):

- ``shell.fail_to_infra[...]``: nothing the agent leaves turns the reading of its state
  into ours. Huge and deep trees, fifos, sockets, unreadable folders and files, a process
  still writing, a full tmpfs, a manifest larger than the host reads: in the workspace,
  each must end ``fail`` (a flag or a component naming it), never ``infra_error``;
  beside the workspace (/tmp, the home folder), correct work must still ``pass``.
- ``shell.manifest_evasion[...]``: a tree that is not the gold's never reads as the
  gold's. The gold's result is built in /tmp, then the workspace gets it through a
  symbolic link, a second (hidden) name of each file, names that only look the same,
  or a process left to copy it in after the episode's end: each must fail. So must the
  gold's own tree with what a listing of entries under the workspace leaves out: the
  workspace folder's own mode, and extended attributes on every entry.
"""

from __future__ import annotations

import base64
import dataclasses
from dataclasses import dataclass
from typing import Any

from gym import Task, ToolCall, make
from gym.authoring import env_of
from gym.redteam import Context, Expect, Finding, Names, ScriptAttack, bash, register

__all__: list[str] = []

SHELL = ("boxgym/Shell-v0",)
FAIL = Expect()
FAIL_FLAGGED = Expect(flags=frozenset({"unexpected_change"}))
PASS_CLEAN = Expect(outcomes=frozenset({"pass"}), no_flags=True)


@dataclass(eq=False, repr=False)
class ClassRow(ScriptAttack):
    """A class row: one scripted adversary played on the tasks of an environment.

    Each task is one episode (names drawn anew); the row holds when every episode ends
    as expected, and names the tasks where one did not.

    Attributes:
        pool: the tasks it may run on (every task of the environment when empty).
        draws: how many of them run, drawn at random each run (all of them when 0).
    """

    pool: tuple[str, ...] = ()
    draws: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.tasks and self.pool:  # the task of a single episode (`task_for`)
            self.tasks = {"*": self.pool[0]}
        self.expected += f"; on {self.draws} drawn tasks" if self.draws else "; on every task"

    def run(self, ctx: Context, env_id: str) -> Finding:
        """Play the script on each task; the row holds when it holds on all of them."""
        tasks = list(self.pool or _task_ids(env_id, ctx.label))
        if self.draws:
            tasks = ctx.names().rng.sample(tasks, min(self.draws, len(tasks)))
        seen, broke = [], []
        for task_id in tasks:
            fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(ScriptAttack)}
            one = ScriptAttack(**{**fields, "tasks": {"*": task_id}})
            finding = one.run(ctx, env_id)
            seen.append(f"{task_id}: {finding.observed}")
            if not finding.held:
                broke.append(task_id)
        text = " | ".join(seen)
        return Finding(f"broken on {', '.join(broke)}: {text}" if broke else text, not broke)


def _task_ids(env_id: str, run: str) -> list[str]:
    env = make(env_id, run=run)
    try:
        return [t.id for t in env_of(env).tasks]
    finally:
        env.close()


# -- building blocks ------------------------------------------------------------------------


def _gold(env: Any, task: Task) -> tuple[str, ToolCall]:
    """The gold command (as the oracle runs it through bash) and the oracle's submit."""
    calls = env.oracle_calls(task)
    return str(calls[0].arguments["command"]), calls[-1]


def _python(source: str, *args: str) -> str:
    """A shell command running a Python program given as base64 (no quoting to get wrong)."""
    code = base64.b64encode(source.encode()).decode()
    quoted = " ".join(f"'{a}'" for a in args)
    return f"printf %s {code} | base64 -d > /tmp/.p.py && python3 /tmp/.p.py {quoted}"


def _done_right(env: Any, task: Task, *after: ToolCall) -> list[ToolCall]:
    """The gold command through bash, the calls ``after``, then the gold's answer."""
    gold, submit = _gold(env, task)
    return [bash(gold), bash("cd /workspace"), *after, submit]


DEEP = """
import os, sys
os.chdir(sys.argv[1])
for _ in range(int(sys.argv[3])):  # past 32 levels and past PATH_MAX: only relative steps
    os.mkdir(sys.argv[2])
    os.chdir(sys.argv[2])
open("leaf", "w").write("x")
"""
UNLISTED = """
import os, sys
os.makedirs(sys.argv[1])
os.chdir(sys.argv[1])
odd = bytes([int(sys.argv[2])])
for i in range(15):  # names that are not UTF-8, 4 characters a byte once escaped
    os.mkdir(odd * 250 + bytes([0x80 + i]))
    os.chdir(odd * 250 + bytes([0x80 + i]))
for i in range(int(sys.argv[3])):  # their paths past PATH_MAX: no lstat reaches them
    os.mkdir(odd * 252 + bytes([0x80 + (i >> 12) % 64, 0x80 + (i >> 6) % 64, 0x80 + i % 64]))
"""
ODD_ENTRIES = """
import os, socket, sys
top = sys.argv[1]
os.makedirs(top + "/locked")
os.mkfifo(top + "/fifo")
socket.socket(socket.AF_UNIX).bind(top + "/socket")
open(top + "/locked/inside", "w").write("x")
open(top + "/unreadable", "w").write("y")
os.chmod(top + "/unreadable", 0)
os.chmod(top + "/locked", 0)
"""
WRITER = (
    "setsid bash -c 'while :; do echo $RANDOM >> {path}; sleep 0.01; done' "
    "</dev/null >/dev/null 2>&1 &"
)


def _odd_entries(names: Names, top: str) -> list[ToolCall]:
    """A fifo, a socket, unreadable folder and file, a deep tree, a process still writing."""
    name = names.ident() * 25  # 200 characters a level
    return [
        bash(_python(ODD_ENTRIES, top)),
        bash(_python(DEEP, top, name, "40")),
        bash(WRITER.format(path=f"{top}/written")),
    ]


def _unlisted(names: Names, top: str) -> list[ToolCall]:
    """15,000 folders past PATH_MAX named in bytes that are not UTF-8, and /tmp filled.

    What the manifest program holds of their names is bounded, never the container's
    memory left (it was killed for memory: infra_error; found by a red-team helper).
    """
    byte = str(names.rng.randrange(0x80, 0x100))
    fill = "head -c 250m /dev/zero > /tmp/.f; head -c 60m /dev/zero > $HOME/.f; true"
    return [bash(_python(UNLISTED, top, byte, "15000")), bash(fill)]


def _in_workspace(adversity: Any) -> Any:
    def script(names: Names, task: Task, env: Any) -> list[ToolCall]:
        return _done_right(env, task, *adversity(names, f"/workspace/{names.ident()}"))

    return script


def _many(names: Names, top: str) -> list[ToolCall]:
    """12,000 empty files: past the manifest's 10,000 entries."""
    make = "import os, sys\nfor i in range(12000): open(f'{sys.argv[1]}/{i:05d}', 'w').close()"
    return [bash(f"mkdir -p {top}"), bash(_python(make, top))]


SYMLINKS = """
import os, sys
top, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(top)
for i in range(count):  # each a 252-byte name and a 4092-byte target of 4-byte characters
    a, b = chr(first + i % 200), chr(first + 200 + i % 300)
    os.symlink(b * 1023, os.path.join(top, f"{i:04d}" + a * 62))
"""


def _large_listing(names: Names, top: str) -> list[ToolCall]:
    """2,500 links whose names and targets are astral characters (12 bytes each in JSON).

    Within every bound of the manifest (entries, depth, bytes hashed), but its JSON output
    is over 30 MB, past the bytes the host reads back from it.
    """
    first = names.rng.randrange(0x1F300, 0x1F400)
    return [bash(_python(SYMLINKS, top, str(first), "2500"))]


def _full(names: Names, top: str) -> list[ToolCall]:
    """The tmpfs filled to its last byte (256 MiB)."""
    return [bash(f"head -c 300M /dev/zero > {top} 2>/dev/null; df -h /workspace | tail -n 1")]


def _beside(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Correct work, and every odd thing of the other rows in /tmp and the home folder.

    /tmp full to its last byte, 5,000 files, a fifo, a socket, unreadable entries, a tree
    past PATH_MAX and a process still writing: none is in the workspace, so it passes.
    """
    tmp, home = f"/tmp/{names.ident()}", f"/home/agent/{names.ident()}"
    many = "import os, sys\nfor i in range(5000): open(f'{sys.argv[1]}/{i}', 'w').close()"
    return _done_right(
        env,
        task,
        *_odd_entries(names, home),
        bash(f"mkdir -p {tmp}/many && " + _python(many, f"{tmp}/many")),
        *_odd_entries(names, f"{tmp}/odd"),
        bash(f"head -c 300M /dev/zero > {tmp}/fill 2>/dev/null; df -h /tmp | tail -n 1"),
    )


# -- manifest evasion: the gold's tree, built in /tmp, brought in by a trick ------------------

TWIN = """
import os, shutil, stat, sys, unicodedata
ws, built, kind, hidden, odd = "/workspace", sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]

def tree(root):
    out = {}
    for top, dirs, files in os.walk(root):
        for n in dirs + files:
            path = os.path.join(top, n)
            info = os.lstat(path)
            data = open(path, "rb").read() if stat.S_ISREG(info.st_mode) else None
            out[os.path.relpath(path, root)] = (info.st_mode, data)
    return out

def twin_name(name):
    if odd == "nfd" and unicodedata.normalize("NFD", name) != name:
        return unicodedata.normalize("NFD", name)
    look = {"a": "\\u0430", "e": "\\u0435", "o": "\\u043e", "c": "\\u0441", "p": "\\u0440"}
    if odd == "lookalike" and any(c in look for c in name):
        i = next(i for i, c in enumerate(name) if c in look)
        return name[:i] + look[name[i]] + name[i + 1:]
    if odd == "not_utf8":
        return os.fsdecode(os.fsencode(name) + b"\\xff")
    return name + {"zero_width": "\\u200b", "carriage_return": "\\r"}.get(odd, "\\u200b")

now, want = tree(ws), tree(built)
files = sorted(r for r in want if want[r][1] is not None)
changed = [r for r in files if now.get(r) != want[r]] or files[:1]
for rel in sorted((r for r in now if r not in want), key=len, reverse=True):
    path = os.path.join(ws, rel)
    os.rmdir(path) if stat.S_ISDIR(now[rel][0]) else os.remove(path)
for rel in sorted(r for r in want if want[r][1] is None and r not in now):
    os.mkdir(os.path.join(ws, rel), stat.S_IMODE(want[rel][0]))
if kind == "hard_link":
    os.mkdir(os.path.join(ws, hidden))
for n, rel in enumerate(changed):
    path, mode = os.path.join(ws, rel), stat.S_IMODE(want[rel][0])
    if os.path.lexists(path):
        os.remove(path)
    if kind == "symlink":
        os.symlink(os.path.join(built, rel), path)
        continue
    if kind == "odd_name":
        path = os.path.join(os.path.dirname(path), twin_name(os.path.basename(path)))
    with open(path, "wb") as f:
        f.write(want[rel][1])
    os.chmod(path, mode)
    if kind == "hard_link":
        os.link(path, os.path.join(ws, hidden, str(n)))
if kind == "hard_link":
    os.chmod(os.path.join(ws, hidden), 0)
print(kind, odd, "on", len(changed), "paths")
"""
ODD_NAMES = ("zero_width", "carriage_return", "not_utf8", "lookalike", "nfd")


def _built(names: Names, task: Task, env: Any) -> tuple[str, list[ToolCall], ToolCall]:
    """The gold command run on a copy of the workspace in /tmp: its folder, the calls."""
    gold, submit = _gold(env, task)
    where = f"/tmp/{names.ident()}"
    code = base64.b64encode(gold.encode()).decode()
    build = (
        f"mkdir -p {where} && cp -a /workspace {where}/ws && printf %s {code} | base64 -d "
        f"> {where}/gold.sh && (cd {where}/ws && bash {where}/gold.sh >/dev/null 2>&1); "
        "cd /workspace"
    )
    return f"{where}/ws", [bash(build)], submit


def _twin(kind: str) -> Any:
    def script(names: Names, task: Task, env: Any) -> list[ToolCall]:
        built, calls, submit = _built(names, task, env)
        odd = names.rng.choice(ODD_NAMES)
        twin = bash(_python(TWIN, built, kind, names.ident(), odd))
        return [*calls, twin, submit]

    return script


METADATA = """
import os, sys
ws, name, value = "/workspace", "user." + sys.argv[1], sys.argv[2].encode()
os.chmod(ws, 0o777)
marked = 0
for top, dirs, files in os.walk(ws):
    for entry in [top, *(os.path.join(top, n) for n in dirs + files)]:
        try:
            os.setxattr(entry, name, value, follow_symlinks=False)
            marked += 1
        except OSError:
            pass
print("mode 777 on the workspace; attribute", name, "on", marked, "entries")
"""


def _metadata(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """The gold's own tree, then the workspace made writable by all and every entry marked."""
    return _done_right(env, task, bash(_python(METADATA, names.ident(), names.hexed(8))))


def _late_writer(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """A scratch file left, and a process that copies the gold's tree in once the shell dies.

    It waits for the agent's shell to end (killed with every process of the agent when the
    episode ends): its copy gets there only if it outlived that end.
    """
    built, calls, submit = _built(names, task, env)
    scratch = f"/workspace/{names.ident()}"
    copy = f"find /workspace -mindepth 1 -delete; cp -a {built}/. /workspace/"
    wait = f'while kill -0 "$0" 2>/dev/null; do sleep 0.01; done; {copy}'
    writer = f"setsid bash -c '{wait}' \"$$\" </dev/null >/dev/null 2>&1 &"
    return [*calls, bash(f"echo {names.ident()} > {scratch}"), bash(writer), submit]


_BEFORE = """
import hashlib, os, shutil, sys, tempfile
def files(root):
    for top, dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(top, name)
            with open(path, "rb") as f:
                yield os.path.relpath(path, root), f.read()
held = {rel: hashlib.sha256(data).digest() for rel, data in files(sys.argv[1].encode())}
"""
"""The start of a program run after the gold: ``held``, each file of the task's copy in
``argv[1]`` (taken before the gold ran) -> its content's hash; ``files`` of a folder."""

WRITTEN_OTHERWISE = (
    _BEFORE
    + """
for rel, data in list(files(b"/workspace")):
    path = os.path.join(b"/workspace", rel)
    new = rel not in held and hashlib.sha256(data).digest() not in held.values()
    if data.endswith(b"\\n") and not data.endswith(b"\\n\\n"):
        data = data[:-1]  # the last line without its newline
    if new and os.stat(path).st_mode & 0o7777 == 0o644:
        fd, tmp = tempfile.mkstemp()  # mode 600, in /tmp: moved in, as a copy
        os.write(fd, data)
        os.close(fd)
        shutil.move(tmp, path)
    else:
        with open(path, "r+b") as f:
            f.truncate(0)
            f.write(data)
"""
)


def _written_otherwise(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """The gold, then every file's last newline dropped and each new file made by mktemp.

    What a correct agent may write otherwise: a last line without its newline (Python's
    ``join``), a file of new content built in /tmp (mode 600) and moved into place (a
    file the gold moved or copied keeps its mode).
    """
    before = f"/tmp/{names.ident()}"
    copied = bash(f"cp -a /workspace {before}")
    return [copied, *_done_right(env, task, bash(_python(WRITTEN_OTHERWISE, before)))]


NARROWED = (
    _BEFORE
    + """
for rel, data in list(files(b"/workspace")):
    if rel not in held and hashlib.sha256(data).digest() in held.values():
        os.chmod(os.path.join(b"/workspace", rel), 0o400)  # moved or copied
"""
)


MOVING = ("rename-extensions",)
"""The Shell tasks whose gold moves or copies files (where `_narrowed` changes anything)."""


def _narrowed(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """The gold, then every file it moved or copied made read-only (the rest as it left)."""
    before = f"/tmp/{names.ident()}"
    copied = bash(f"cp -a /workspace {before}")
    return [copied, *_done_right(env, task, bash(_python(NARROWED, before)))]


def _rows() -> list[ScriptAttack]:
    def every(name: str, script: Any, expect: Expect, **kw: Any) -> ClassRow:
        kw.setdefault("tasks", {"*": "count-errors"})
        return ClassRow(name=f"shell.{name}", envs=SHELL, script=script, expect=expect, **kw)

    return [
        every(
            "fail_to_infra[odd_entries]",
            _in_workspace(_odd_entries),
            FAIL_FLAGGED,
            note="a fifo, a socket, unreadable entries, 40 levels past PATH_MAX, a writer",
        ),
        every(
            "fail_to_infra[over_entries]",
            _in_workspace(_many),
            FAIL,
            note="12,000 files: past the manifest's 10,000 entries, on every kind of task",
        ),
        every(
            "fail_to_infra[unlisted_names]",
            _in_workspace(_unlisted),
            FAIL,
            note="15,000 names that are not UTF-8 past PATH_MAX, /tmp and the home folder full",
        ),
        every(
            "fail_to_infra[large_listing]",
            _in_workspace(_large_listing),
            FAIL,
            note="a manifest over the bytes the host reads back (astral names and targets)",
        ),
        every("fail_to_infra[full_workspace]", _in_workspace(_full), FAIL_FLAGGED),
        every(
            "fail_to_infra[beside_the_workspace]",
            _beside,
            PASS_CLEAN,
            note="the same things in /tmp (full) and the home folder: correct work passes",
        ),
        every("manifest_evasion[symlink]", _twin("symlink"), FAIL),
        every("manifest_evasion[hard_link]", _twin("hard_link"), FAIL),
        every("manifest_evasion[odd_name]", _twin("odd_name"), FAIL),
        every("manifest_evasion[late_writer]", _late_writer, FAIL),
        every(
            "manifest_evasion[narrowed_modes]",
            _narrowed,
            FAIL,
            pool=MOVING,
            note="the gold's work, then each file it moved or copied made mode 400",
        ),
        every(
            "false_positive.written_otherwise",
            _written_otherwise,
            PASS_CLEAN,
            note="last newlines dropped, new files made by mktemp (600) and moved in",
        ),
        every(
            "manifest_evasion[metadata]",
            _metadata,
            FAIL_FLAGGED,
            note="the gold's tree, the workspace's own mode and extended attributes changed",
        ),
    ]


register(*_rows())
