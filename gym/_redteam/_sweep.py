"""Class rows: one generic adversary graded against every task an environment ships.

A row of the other modules plays one attack on one task; a sweep row asks whether a
whole class of attack is impossible. It grades a generic non-solution (a liar module:
every public name an object that answers every operator in the most cheating way, see
`gym._envs._panel`) as the final state of every task of the environment, every split, and
holds only when each of them ends ``fail``: a single ``pass`` is an unearned reward,
a single ``infra_error`` is a failure the code under test turned into ours.

The final state is handed to the environment's grader directly (`ContainerEnv.regrade`:
the same grading as at an episode's end, in a fresh grading container), without an
agent container: writing files is all the adversary does. The three liar variants
(delayed truth, polarity, string/hash/length lies) rotate over the tasks, so every
variant meets every kind of check the corpus holds.
"""

from __future__ import annotations

import ast
import posixpath
import random
import textwrap
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import gymnasium

from gym._core._models import Task, Verdict
from gym._envs._env import ContainerEnv, env_of
from gym._envs._panel import LIAR_VARIANTS, LiarVariant, graded_modules, liar_files
from gym._grading import Export
from gym._grading._ast import parse_python
from gym._redteam._core import Attack, Context, Finding, Names, register

__all__ = [
    "CODE_ENVS",
    "AnswerSweep",
    "ChannelSweep",
    "EmptiedSweep",
    "ExhaustionSweep",
    "HiddenProcessSweep",
    "HonestSweep",
    "KernelHoardSweep",
    "LiarSweep",
    "MemorySweep",
    "RoundedSweep",
    "SignalSweep",
    "StallSweep",
    "UnchargedMemorySweep",
    "liar_export",
]

CODE_ENVS = ("boxgym/PyFunc-v0", "boxgym/HumanEval-v0", "boxgym/MBPP-v0", "boxgym/PyRepo-v0")
CONCURRENCY = 4
"""Gradings at once (each is a fresh container; they wait on the engine more than the CPU)."""


def liar_export(task: Task, variant: LiarVariant, prelude: str = "") -> Export:
    """The final state of an agent that wrote a liar module into every graded module.

    ``prelude``: code each module runs before the liar's.
    """
    return Export.written(
        {rel: (prelude + text).encode() for rel, text in liar_files(task, variant).items()}
    )


@dataclass
class LiarSweep(Attack):
    """The liar family over every task of a code environment: none may pass.

    One row per environment (``calls.liar_sweep[PyFunc-v0]``...): a row of one env runs
    there whatever the plan's choice of representatives, so every task of every code
    environment is graded in every run of the suite (but a row with a ``sample``).
    """

    name: str = "calls.liar_sweep"
    envs: tuple[str, ...] = CODE_ENVS
    expected: str = "fail on every task (no pass, no infra_error)"
    solo: bool = True
    limit: int | None = None
    """Grade only the first N tasks (tests); every task when None."""
    sample: int | None = None
    """Grade N tasks drawn with the run's seed (every task with ``--long``); None: all."""

    def chosen(self, ctx: Context, tasks: list[Task]) -> list[Task]:
        """The tasks this run grades: the first ``limit``, then a ``sample`` of them.

        The sample is drawn with the run's seed and the row's name, so a run replays
        (``gym redteam --seed``) and runs with other seeds see other tasks.
        """
        tasks = tasks[: self.limit]
        if self.sample is None or ctx.long or self.sample >= len(tasks):
            return tasks
        drawn = set(random.Random(f"{ctx.seed}:{self.name}").sample(range(len(tasks)), self.sample))
        return [t for i, t in enumerate(tasks) if i in drawn]

    def run(self, ctx: Context, env_id: str) -> Finding:
        """Grade the liar against each task; the row holds when every verdict is ``fail``."""
        every = _tasks(env_id, ctx.env_kwargs)
        tasks = self.chosen(ctx, every)
        variants: list[LiarVariant] = list(LIAR_VARIANTS.values())
        local = threading.local()

        prelude = self.prelude(ctx)

        def grade(item: tuple[int, Task]) -> tuple[str, Verdict]:
            index, task = item
            if not hasattr(local, "env"):
                local.env = _env(env_id, ctx.env_kwargs)
            export = self.final_state(local.env, task, variants[index % len(variants)], prelude)
            return task.id, local.env.regrade(task.id, export)

        with ThreadPoolExecutor(CONCURRENCY) as pool:
            verdicts = list(pool.map(grade, enumerate(tasks)))
        return _finding(verdicts, self.held, of=len(every) if self.sample else 0)

    def held(self, verdict: Verdict) -> bool:
        """Whether one task's verdict is what the row expects: ``fail``."""
        return verdict.outcome == "fail"

    def prelude(self, ctx: Context) -> str:
        """Code each liar module runs first (none: the liar alone)."""
        return ""

    def final_state(
        self, env: ContainerEnv[Any], task: Task, variant: LiarVariant, prelude: str
    ) -> Export:
        """What the adversary leaves for grading: the liar, after ``prelude``."""
        return liar_export(task, variant, prelude)


@dataclass
class SignalSweep(LiarSweep):
    """The liar, signalling every process it can for the whole grading, over every task.

    The code under test sends STOP, TERM, INT, HUP and USR1 to every pid it sees and to
    -1 (all it may signal), from a thread that keeps at it until the grading ends. A
    judge process it could stop or kill would turn its fail into ``infra_error`` (a
    grading that never reports) or stop the checks; it runs as a uid no judge process
    has, so none is reached, and every task must still end ``fail``.
    """

    name: str = "grading.signal_sweep"
    expected: str = "fail on every task (signals reach no judge: no infra_error)"

    def prelude(self, ctx: Context) -> str:
        names = Names(random.Random(ctx.rng.getrandbits(64)))  # no canary needed
        os_, sig, pid, loop = (names.ident() for _ in range(4))
        return (
            f"import os as {os_}, signal as {sig}, threading, time\n"
            f"def {loop}():\n"
            f"    me = {os_}.getpid()\n"
            f"    kinds = [getattr({sig}, k) for k in ('SIGSTOP', 'SIGTERM', 'SIGINT', 'SIGHUP',"
            f" 'SIGUSR1')]\n"
            f"    while True:\n"
            f"        pids = [-1] + [int(p) for p in {os_}.listdir('/proc') if p.isdigit()]\n"
            f"        for {pid} in pids:\n"
            f"            for kind in kinds:\n"
            f"                if {pid} != me:\n"
            f"                    try:\n"
            f"                        {os_}.kill({pid}, kind)\n"
            f"                    except OSError:\n"
            f"                        pass\n"
            f"        time.sleep(0.01)\n"
            f"threading.Thread(target={loop}, daemon=True).start()\n"
        )


_FUZZ_TOKENS = (
    "{",
    "}",
    "[",
    "]",
    '"',
    ":",
    ",",
    "\n",
    " ",
    "-",
    ".",
    "1e999",
    "-0",
    "NaN",
    "Infinity",
    "true",
    "null",
    "0" * 5000,
    "1" * 40,
    '"\\ud800"',
    '"\\u0000"',
    "[" * 3000,
    '{"a":' * 500,
    '"a"',
    '"ok"',
    '"err"',
    '"back"',
    '"op"',
    '"id"',
    '"t"',
    '"v"',
    '"c"',
    '"o"',
    '"event"',
    '"outcome"',
    '"passed"',
    '"finished"',
    '"spawn"',
    '"kill"',
    '"__class__"',
    '"str"',
    '"int"',
)
"""What a fuzzed frame is made of: JSON's punctuation and extremes, the wire's own keys (the
grading script's source is readable in the container, so an adversary knows them)."""


@dataclass
class ChannelSweep(LiarSweep):
    """The liar, writing fuzz into every socket it holds for the whole grading, every task.

    A thread of the code under test writes frames drawn from JSON's punctuation and
    extremes, the wire's keys, NUL, invalid UTF-8 and lone surrogates, half of them
    ending a line, at random moments between its own answers, to every socket descriptor
    it finds. Whatever reaches the checker is decoded bounded and totally: a frame that
    is not an answer to the request asked ends that worker as the code's ``fail``
    (`report_forgery`), never a crash of the checker (``infra_error``) and never a pass.
    """

    name: str = "grading.channel_sweep"
    expected: str = "fail on every task (fuzz on the channel is the code's fail: no infra_error)"

    def prelude(self, ctx: Context) -> str:
        rng = random.Random(ctx.rng.getrandbits(64))
        names = Names(rng)
        loop, tokens = names.ident(), names.ident()
        encoded = [t.encode("utf-8", "surrogatepass") for t in _FUZZ_TOKENS]
        encoded += [b"\x00", b"\xff\xfe", bytes(rng.randrange(256) for _ in range(64))]
        return (
            f"import os, random, stat, threading, time\n"
            f"{tokens} = {encoded!r}\n"
            f"def {loop}():\n"
            f"    rnd = random.Random(os.urandom(8))\n"
            f"    socks = []\n"
            f"    for name in os.listdir('/proc/self/fd'):\n"
            f"        try:\n"
            f"            if stat.S_ISSOCK(os.fstat(int(name)).st_mode):\n"
            f"                socks.append(int(name))\n"
            f"        except OSError:\n"
            f"            pass\n"
            f"    while True:\n"
            f"        frame = b''.join(rnd.choice({tokens}) for _ in range(rnd.randint(1, 60)))\n"
            f"        if rnd.random() < 0.5:\n"
            f"            frame += b'\\n'\n"
            f"        for fd in socks:\n"
            f"            try:\n"
            f"                os.write(fd, frame)\n"
            f"            except OSError:\n"
            f"                pass\n"
            f"        time.sleep(rnd.choice((0, 0, 0.001, 0.01)))\n"
            f"threading.Thread(target={loop}, daemon=True).start()\n"
        )


def _every_handler(wrapped: str) -> str:
    """Code that replaces every handler of the grading machinery loaded in its process.

    A handler table is any dict of callables of a module named ``boxgym*`` (no name of
    the machinery read); each handler becomes ``wrapped``, an expression of ``handler``
    and ``key``.
    """
    return f"""
for module in list(sys.modules.values()):
    if not getattr(module, "__name__", "").startswith("boxgym"):
        continue
    for table in list(vars(module).values()):
        if type(table) is dict and table and all(callable(v) for v in table.values()):
            for key, handler in list(table.items()):
                table[key] = {wrapped}
"""


@dataclass
class AnswerSweep(LiarSweep):
    """The liar, whose process answers the checker's requests with hostile values, every task.

    At import, the code under test wraps every table of handlers (a dict of callables) of
    every module of the grading machinery loaded in its process, names unread: each
    handler still does its work, then, always for about a third of them and now and then
    for the rest, its answer is replaced by something made to break whoever touches it:
    an object whose ``repr``, ``str``, ``==``, ``hash``, ``len`` and truth raise, answer
    the wrong type or end the process; a range of 10**8 or a list of 27 billion items
    sharing its parts (a few bytes each); or an exception raised instead (holding such
    an object, an int with no text, SystemExit, KeyboardInterrupt, GeneratorExit, a
    BaseException of its own whose text raises), half the time sent without its text.
    An answer is a plain value copied across or the code's failure: describing,
    formatting or reporting it must never crash the checker (``infra_error``) nor pass
    a check, so every task must end ``fail``.
    """

    name: str = "grading.answer_sweep"
    expected: str = "fail on every task (a hostile answer is the code's fail: no infra_error)"

    def prelude(self, ctx: Context) -> str:
        names = Names(random.Random(ctx.rng.getrandbits(64)))
        hostile, wrap, make, rnd, untold = (names.ident() for _ in range(5))
        return f"""
import os, random, sys
{rnd} = random.Random(os.urandom(8))
class {hostile}:
    def __init__(self, how):
        object.__setattr__(self, "how", how)
    def _act(self, *args):
        how = object.__getattribute__(self, "how")
        if how == 0:
            raise ValueError(chr(0xD800) + chr(0xDFFF))
        if how == 1:
            return 12345
        if how == 2:
            os._exit(0)
        raise SystemExit({hostile}(0))
    __repr__ = __str__ = __format__ = __hash__ = __len__ = __bool__ = _act
    __eq__ = __ne__ = __lt__ = __iter__ = __index__ = __float__ = _act
def {make}():
    kind = {rnd}.randrange(11)
    if kind < 3:
        return {hostile}(kind)
    if kind == 8:
        return range(10**8)
    if kind == 9:
        leaf = [0] * 3000
        return [[leaf] * 3000] * 3000
    if kind == 10:
        raise ValueError(10**5000)
    if kind == 3:
        raise ValueError({hostile}({rnd}.randrange(4)))
    if kind == 4:
        raise SystemExit({hostile}(0))
    if kind == 5:
        raise KeyboardInterrupt({hostile}(1))
    if kind == 6:
        raise GeneratorExit()
    class Own(BaseException):
        def __str__(self):
            return {hostile}(0)._act()
    raise Own({hostile}(2))
def {wrap}(handler, always):
    def answer(*args, **kwargs):
        out = handler(*args, **kwargs)
        if always or {rnd}.random() < 0.2:
            return {make}()
        return out
    return answer
def {untold}(encode):
    def told(*args, **kwargs):
        out = encode(*args, **kwargs)
        if type(out) is dict and {rnd}.random() < 0.5:
            out["str"] = None  # no text on the wire: the checker must not ask for one
        return out
    return told
for module in list(sys.modules.values()):
    if getattr(module, "__name__", "").startswith("boxgym"):
        if callable(getattr(module, "encode_exception", None)):
            module.encode_exception = {untold}(module.encode_exception)
""" + _every_handler(f"{wrap}(handler, {rnd}.random() < 0.3)")


@dataclass
class MemorySweep(LiarSweep):
    """The liar, whose process makes the checker hold all it can, over every task.

    At import, the code under test wraps every handler table of the grading machinery
    it finds. Once the tests have begun (its first call or operator handled) it lifts
    its own process's output cap (the capture objects standing in for stdout and
    stderr answer about 4 MB each with every message), it sends 2,000 requests the
    checker refuses with every answer, about one answer in ten becomes an exception of
    5 MB of text lines and about one in ten 20,000 objects of classes made for that
    answer (a mirror class each, in the checker). Each answer stays under the checker's
    per-message and per-test read limits; what the checker keeps from one test to the
    next (pytest keeps every test's captured output and failed report; the mirror
    classes; what it holds for the worker) must stay bounded too, or the checker is
    killed for memory and the code's fail becomes ``infra_error``. Every task must end
    ``fail``.

    A long row (``gym redteam --long``): every grading moves hundreds of megabytes.
    ``grading.memory_flood[ENV]`` runs the same adversary on the first tasks of each
    environment in every run of the suite.
    """

    name: str = "grading.memory_sweep"
    expected: str = "fail on every task (what the checker keeps is bounded: no infra_error)"
    long: bool = True

    def prelude(self, ctx: Context) -> str:
        names = Names(random.Random(ctx.rng.getrandbits(64)))
        chunk, fresh, wrap, rnd, seen, nonsense = (names.ident() for _ in range(6))
        return f"""
import os, random, sys
{rnd} = random.Random(os.urandom(8))
{chunk} = "z" * 3_900_000
{seen} = [0]
def {fresh}():
    tag = os.urandom(4).hex()
    return [type("K" + tag + str(i), (), {{}})() for i in range(20000)]
def {nonsense}(conn):
    for _ in range(2000):  # requests the checker refuses: nothing may stay behind for them
        try:
            conn.request(0, {{}})
        except Exception:
            pass
def {wrap}(handler, key):
    def answer(*args, **kwargs):
        out = handler(*args, **kwargs)
        if key in ("call", "op") and not {seen}[0]:  # the tests have begun
            {seen}[0] = 1
            for stream in (sys.stdout, sys.stderr):  # every answer now carries ~8 MB
                try:
                    stream.take = lambda: {chunk}
                except Exception:
                    pass
        if {seen}[0] and args and hasattr(args[0], "request"):
            {nonsense}(args[0])
        if {seen}[0] and {rnd}.random() < 0.1:
            raise ValueError("a\\n" * 2_700_000)  # a text pytest would keep per test
        return {fresh}() if {seen}[0] and {rnd}.random() < 0.1 else out
    return answer
""" + _every_handler(f"{wrap}(handler, key)")


@dataclass
class ExhaustionSweep(LiarSweep):
    """The liar, after taking every resource it can reach in the grading container.

    At import, before the liar's answers, the code under test fills every writable
    folder of every read-write mount it sees (the mount table, not a list of paths) until
    the disk says no, takes up to 2,000 names in each, holds 192 MiB, opens descriptors
    until the kernel refuses, forks sleeping processes in sessions of their own until the
    kernel refuses and starts 50 sleeping threads. Every worker generation does it again.
    What the judge needs (processes, memory, a place for its report, its own home) must
    not be among what it took: every task must still end ``fail``.

    A long row (``gym redteam --long``): every grading fills the disk and forks to the
    limit, about 1.5 s a task at 4 at once, 34 minutes over the four code environments.
    """

    name: str = "grading.exhaustion_sweep"
    expected: str = "fail on every task (what the code takes is never the judge's: no infra_error)"
    long: bool = True

    def prelude(self, ctx: Context) -> str:
        names = Names(random.Random(ctx.rng.getrandbits(64)))
        take, held = names.ident(), names.ident()
        return f"""
import os, threading, time
def {take}():
    mounts = []
    try:
        for line in open("/proc/self/mounts"):
            parts = line.split()
            writable = len(parts) > 3 and "rw" in parts[3].split(",")
            if writable and not parts[1].startswith(("/proc", "/sys")):
                mounts.append(parts[1])
    except OSError:
        pass
    block = b"\\x01" * (1 << 20)
    for top in mounts:
        for root, dirs, files in os.walk(top):
            if not os.access(root, os.W_OK | os.X_OK):
                continue
            new = os.O_WRONLY | os.O_CREAT | os.O_EXCL
            try:
                fd = os.open(os.path.join(root, "f" + os.urandom(6).hex()), new, 0o600)
            except OSError:
                continue
            try:
                while True:
                    os.write(fd, block)
            except OSError:
                pass
            os.close(fd)
            for _ in range(2000):
                try:
                    os.close(os.open(os.path.join(root, "n" + os.urandom(6).hex()), new, 0o600))
                except OSError:
                    break
    kept = []
    try:
        kept.append(b"\\x02" * (192 << 20))
    except MemoryError:
        pass
    fds = []
    try:
        while len(fds) < 100000:
            fds.append(os.open("/dev/null", os.O_RDONLY))
    except OSError:
        pass
    for fd in fds[: len(fds) // 2]:
        os.close(fd)
    for _ in range(200):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                os.setsid()
            except OSError:
                pass
            while True:
                time.sleep(1)
    for _ in range(50):
        try:
            threading.Thread(target=time.sleep, args=(10**6,), daemon=True).start()
        except RuntimeError:
            break
    return kept
{held} = {take}()
"""


@dataclass
class HiddenProcessSweep(LiarSweep):
    """The liar, whose every worker leaves threads that a scan of /proc could miss.

    At import, the code under test names its process with bytes that are no UTF-8 (its
    comm, shown in /proc/PID/status) and starts sleeping threads up to its process limit;
    each of its functions, once called, ends the calling (main) thread alone (the exit
    system call, not exit_group): the process is a zombie in /proc while its threads
    hold their pids. The checker then starts a new worker for the next check, which does
    the same. A grading script that took such a zombie for a dead process, or whose scan
    stopped at a status it could not decode, left three generations' threads alive; the
    container's process limit then refused the script's own fork, and the code's fail
    was ``infra_error`` (two red-team helpers, on MBPP, PyFunc and PyRepo). Every task
    must end ``fail``.

    A long row over every task; ``grading.hidden_processes[ENV]`` runs it on the first
    tasks of each environment in every run (HumanEval's tasks have one check: one worker).
    """

    name: str = "grading.hidden_processes_sweep"
    expected: str = "fail on every task (processes left behind are the code's: no infra_error)"
    long: bool = True

    def prelude(self, ctx: Context) -> str:
        names = Names(random.Random(ctx.rng.getrandbits(64)))
        return " ".join(names.ident() for _ in range(4))  # the adversary's names

    def final_state(
        self, env: ContainerEnv[Any], task: Task, variant: LiarVariant, prelude: str
    ) -> Export:
        """The liar, each module's functions ending their thread, ``prelude``'s names."""
        hold, hang_up, leave, name = prelude.split()
        start = f"""
import ctypes, os, platform, threading, time
def {hold}():
    while True:
        time.sleep(3600)
def {hang_up}():
    time.sleep(0.5)  # the worker has called and ended its main thread
    os.closerange(3, 4096)  # the channel: the checker need not wait out the check
    {hold}()
def {leave}(*_, **__):
    ctypes.CDLL(None).syscall(93 if platform.machine() == "aarch64" else 60, 0)  # exit
try:
    with open("/proc/self/comm", "wb") as _comm:
        _comm.write(bytes([0xFF, 0xFE]) + os.urandom(6))
except OSError:
    pass
threading.stack_size(256 * 1024)
threading.Thread(target={hang_up}, daemon=True).start()
for _ in range(200):
    try:
        threading.Thread(target={hold}, daemon=True).start()
    except RuntimeError:
        break
"""
        end = f"""
for {name}, _value in list(globals().items()):
    if callable(_value) and getattr(_value, "__module__", None) == __name__:
        if not {name}.startswith("_") and _value not in ({hold}, {hang_up}, {leave}):
            globals()[{name}] = {leave}
"""
        files = liar_files(task, variant)
        return Export.written({rel: (start + text + end).encode() for rel, text in files.items()})


@dataclass
class StallSweep(LiarSweep):
    """The reference solution, holding the checker open once its checks are over.

    The code under test is correct: every check passes, decided on plain values. At
    import it wraps every handler table of the grading machinery, and the one request
    no check makes (the liveness ask at the session's end; the grading script is
    readable in the container) it answers only with requests of its own, each at once,
    for ever. Were a request's deadline per message, the grading would run to its own
    deadline and report every check passed without the session's end ever seen: the
    code decides when its grading ends. A grading must see the code through to the end,
    so every task must end ``fail`` (no ``pass``, no ``infra_error``), soon after its
    checks (``call_timeout`` later, not the grading's timeout).

    A long row over every task (each grading waits out one request's deadline);
    ``grading.stall[ENV]`` runs it on the first tasks of each environment in every run.
    """

    name: str = "grading.stall_sweep"
    expected: str = "fail on every task (the code cannot hold its grading open: no pass)"
    long: bool = True

    def prelude(self, ctx: Context) -> str:
        names = Names(random.Random(ctx.rng.getrandbits(64)))
        hold, scope = names.ident(), names.ident()
        body = f"""
import sys, time
def {hold}(handler, key):
    def answer(*args, **kwargs):
        if key == "ping" and args and hasattr(args[0], "request"):
            while True:
                try:
                    args[0].request(0, {{}})
                except Exception:
                    pass
                time.sleep(0.1)
        return handler(*args, **kwargs)
    return answer
""" + _every_handler(f"{hold}(handler, key)")
        # in a function of its own: appended to a module, it leaves the module's names be
        return f"def {scope}():\n{textwrap.indent(body, '    ')}\n{scope}()\n"

    def final_state(
        self, env: ContainerEnv[Any], task: Task, variant: LiarVariant, prelude: str
    ) -> Export:
        """The reference solution's files, each Python module ending with ``prelude``."""
        files = {
            rel: text + ("\n" + prelude if _is_module(rel) else "")
            for rel, text in _reference(env, task).items()
        }
        return Export.written({rel: text.encode() for rel, text in files.items()})


@dataclass
class KernelHoardSweep(LiarSweep):
    """The task's unimplemented modules, filling what the kernel keeps beyond their processes.

    At import, each graded module (as the task hands it over, with its stubs) takes
    System V shared memory segments, touched page by page, until the container's memory
    (its cgroup's limit and use, read from the cgroup's files) is full but for 1 MiB,
    creates System V message queues and fills each until the kernel refuses, semaphore
    sets and POSIX message queues until refused, then, in every tmpfs it may write
    (/tmp, /dev/shm), empty files with long names, each given a 64 KiB extended
    attribute, until refused; and keeps topping all of it up from a daemon thread every
    3 ms. Such objects outlive the processes that made them and no process limit (nor a
    tmpfs's size) counts them, but their memory is the container's: unbounded, the
    grading container filled until the kernel killed the checker and the code's fail
    became ``infra_error`` (IPC: 15 of 31 PyRepo tasks; names and attributes: every code
    environment, found by red-team helpers). Every task must end ``fail``, and
    none with a process killed at the container's memory limit: which process the kernel
    kills there is chance (the worker, whose OOM score is highest, or the checker), so
    the kill itself says the hoard was not bounded, whoever it took.

    A long row over every task; ``grading.kernel_hoard[ENV]`` runs it on the first tasks of
    each environment in every run.
    """

    name: str = "grading.kernel_hoard_sweep"
    expected: str = (
        "fail on every task, the container's memory never full"
        " (the kernel's IPC objects, a tmpfs's inodes and attributes are bounded:"
        " no infra_error)"
    )
    long: bool = True

    def held(self, verdict: Verdict) -> bool:
        """``fail``, with no process of the grading killed at the container's memory limit."""
        return verdict.outcome == "fail" and not any(
            flag.name == "resource_limit" and "container's memory limit" in flag.detail
            for flag in verdict.flags
        )

    def prelude(self, ctx: Context) -> str:
        names = Names(random.Random(ctx.rng.getrandbits(64)))
        scope, fill, loop, read, files = (names.ident() for _ in range(5))
        body = f"""
import ctypes, os, threading, time
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget.restype = libc.msgget.restype = libc.semget.restype = ctypes.c_int
libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
libc.msgget.argtypes = [ctypes.c_int, ctypes.c_int]
libc.msgsnd.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.semget.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
try:
    posix = libc if hasattr(libc, "mq_open") else ctypes.CDLL("librt.so.1", use_errno=True)
    posix.mq_open.restype = ctypes.c_int
    posix.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    posix.mq_send.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint]
except (OSError, AttributeError):
    posix = None
NEW, NOWAIT = 0o1600, 0o4000  # IPC_CREAT | 0600; IPC_NOWAIT
POSIX_NEW = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NONBLOCK
CGROUP = "/sys/fs/cgroup/memory"  # v2's memory.max..., else v1's folder
message = ctypes.create_string_buffer(8 + 8192)
ctypes.c_long.from_buffer(message).value = 1  # a message's type comes first
text = bytes(8192)
def {read}(*paths):
    for path in paths:
        try:
            with open(path) as fh:
                value = fh.read().split()[0]
            return None if value == "max" else int(value)
        except (OSError, ValueError, IndexError):
            continue
    return None
def {fill}(margin):
    top = {read}(f"{{CGROUP}}.max", f"{{CGROUP}}/memory.limit_in_bytes") or 1 << 30
    for _ in range(100000):
        used = {read}(f"{{CGROUP}}.current", f"{{CGROUP}}/memory.usage_in_bytes")
        room = top - (used or 0) - margin
        if room < 1 << 20:
            break
        size = min(room, 32 << 20) & ~0xFFFFF
        segment = libc.shmget(0, size, NEW)
        if segment < 0:
            break
        address = libc.shmat(segment, None, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            break
        ctypes.memset(address, 1, size)
        libc.shmdt(address)
    for _ in range(256):
        queue = libc.msgget(0, NEW)
        if queue < 0:
            break
        for _ in range(10000):
            if libc.msgsnd(queue, message, 8192, NOWAIT) != 0:
                break
    for _ in range(256):
        if libc.semget(0, 250, NEW) < 0:
            break
    for _ in range(256 if posix else 0):
        name = ("/" + os.urandom(8).hex()).encode()
        queue = posix.mq_open(name, POSIX_NEW, 0o600, None)
        if queue < 0:
            break
        for _ in range(10000):
            if posix.mq_send(queue, text, 8192, 0) != 0:
                break
        os.close(queue)
    {files}()
def {files}():
    for top in ("/tmp", "/dev/shm"):
        for _ in range(100000):
            path = f"{{top}}/{{os.getpid()}}-{{os.urandom(6).hex()}}" + "n" * 200
            try:
                open(path, "w").close()
            except OSError:
                break
            try:
                os.setxattr(path, "user.a", bytes(65000))
            except OSError:
                pass
def {loop}():
    while True:
        try:
            {fill}(0)
        except BaseException:
            pass
        time.sleep(0.003)
try:
    {fill}(1 << 20)
except BaseException:
    pass
threading.Thread(target={loop}, daemon=True).start()
"""
        # in a function of its own: appended to a module, it leaves the module's names be
        return f"def {scope}():\n{textwrap.indent(body, '    ')}\n{scope}()\n"

    def final_state(
        self, env: ContainerEnv[Any], task: Task, variant: LiarVariant, prelude: str
    ) -> Export:
        """The task's graded modules as it hands them over, each ending with ``prelude``."""
        files = {rel: f"{text}\n{prelude}" for rel, text in graded_modules(task).items()}
        return Export.written({rel: text.encode() for rel, text in files.items()})


@dataclass
class UnchargedMemorySweep(LiarSweep):
    """The task's unimplemented modules, filling memory no process is charged with.

    At import, each graded module sets its process's OOM score back to 0 (a process may
    lower what it raised itself, down to a floor nobody set), makes a memfd and becomes a
    small shell whose ``dd`` writes more than the container's memory limit into it, then
    sleeps holding it. A memfd's pages count against the container but in no process's
    size, so the kernel, choosing among processes of one score by their size, kills the
    checker or the grading script: the code's fail was then ``infra_error`` in every code
    environment (8 of 8 runs, found by a red-team helper). A grading killed at its
    container's memory limit is the code's (the grading's own share is bounded): every
    task must end ``fail``.

    A long row over every task; ``grading.uncharged_memory[ENV]`` runs it on the first
    tasks of each environment in every run.
    """

    name: str = "grading.uncharged_memory_sweep"
    expected: str = "fail on every task (the grading killed at its memory limit: not infra_error)"
    long: bool = True

    def prelude(self, ctx: Context) -> str:
        names = Names(random.Random(ctx.rng.getrandbits(64)))
        scope, limit, holder = (names.ident() for _ in range(3))
        body = f"""
import os
{limit} = 1 << 30
for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
    try:
        with open(path) as fh:
            {limit} = min(int(fh.read().split()[0]), 4 << 30)
        break
    except (OSError, ValueError, IndexError):
        continue
try:
    with open("/proc/self/oom_score_adj", "w") as fh:
        fh.write("0")
except OSError:
    pass
{holder} = os.memfd_create("{names.ident()}", 0)
blocks = {limit} // 65536 + 2048
os.execv("/bin/sh", ["sh", "-c", f"dd if=/dev/zero bs=64k count={{blocks}} 1>&{{{holder}}} "
         "2>/dev/null; exec sleep 3600"])
"""
        return f"def {scope}():\n{textwrap.indent(body, '    ')}\n{scope}()\n"


@dataclass
class EmptiedSweep(LiarSweep):
    """The reference solution, which empties what it was handed once it has answered.

    Expected values are the checker's, computed before the code runs; arguments cross to
    the code as copies whose changes are put back. A check that computes its expected
    value after the call, from an argument the code can change (one did: a longest
    increasing subsequence), fails correct code that empties its argument, and passes
    code that empties it and answers for the empty one. Here the entry function of
    every task answers what the reference answers (its own recursive calls left alone),
    then empties every list, dict, set and bytearray it was handed: correct work with a
    side effect no task forbids, so every task must end ``pass`` (a ``fail`` is a check
    that read an argument after the call).
    """

    name: str = "calls.emptied_arguments"
    envs: tuple[str, ...] = CODE_ENVS[:3]
    expected: str = "pass on every task (expected values come before the call)"
    long: bool = False

    def held(self, verdict: Verdict) -> bool:
        """The reference's answers pass, whatever it then did to its arguments."""
        return verdict.outcome == "pass"

    def prelude(self, ctx: Context) -> str:
        names = Names(random.Random(ctx.rng.getrandbits(64)))
        return names.ident()  # the wrapper's name

    def final_state(
        self, env: ContainerEnv[Any], task: Task, variant: LiarVariant, prelude: str
    ) -> Export:
        """The reference files, the graded module's entry wrapped by ``prelude`` (a name)."""
        grading = task.data.get("grading", {})
        module, entry = str(grading.get("module", "")), str(grading.get("entry", ""))
        files = _reference(env, task)
        if module not in files or not entry.isidentifier():
            raise ValueError(f"{task.id}: no reference module {module!r} with entry {entry!r}")
        files[module] += f"\n\n{self.wrapper(prelude)}{entry} = {prelude}({entry})\n"
        return Export.written({rel: text.encode() for rel, text in files.items()})

    def wrapper(self, name: str) -> str:
        """The source of ``name(inner)``: the entry function as this row's adversary calls it."""
        return f"""def {name}(inner):
    import copy
    inside = []
    def emptying(*args, **kwargs):
        if inside:  # the reference calling itself: its own business
            return inner(*args, **kwargs)
        inside.append(1)
        try:
            answer = inner(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        finally:
            inside.clear()
        for arg in (*args, *kwargs.values()):
            if type(arg) in (list, dict, set, bytearray):
                arg.clear()
        return answer
    return emptying
"""


@dataclass
class RoundedSweep(EmptiedSweep):
    """The reference solution whose floats land a few bits off, as another order's would.

    Two correct programs that do the same arithmetic in another order answer floats
    that differ in their last bits (MBPP/746: ``r * r * a * pi / 360`` and ``pi * r ** 2 *
    a / 360``), so a check comparing floats bit for bit fails correct work. Here the
    entry function answers what the reference answers, each float in it (in lists,
    tuples and dict values too) moved 4 units in the last place: correct work, so every
    task must end ``pass``. In every run, the tasks whose checks hold a float literal;
    every task with ``--long``.
    """

    name: str = "calls.rounded_answers"
    envs: tuple[str, ...] = CODE_ENVS[1:3]
    expected: str = "pass on every task whose checks compare floats (no bit-for-bit check)"

    def chosen(self, ctx: Context, tasks: list[Task]) -> list[Task]:
        """The tasks whose hidden checks assert something of a float literal.

        Every task with ``--long``: a task whose answers are floats compared with ints, as
        MBPP/935's ``series_sum(7) == 140``, is among them only then.
        """
        tasks = super().chosen(ctx, tasks)
        return tasks if ctx.long else [task for task in tasks if _asserts_floats(task)]

    def wrapper(self, name: str) -> str:
        """``name(inner)``: the entry answering the reference's answer, its floats moved."""
        return f"""def {name}(inner):
    import math
    def moved(value):
        if type(value) is float and math.isfinite(value):
            for _ in range(4):
                value = math.nextafter(value, math.inf)
            return value
        if type(value) is complex:
            return complex(moved(value.real), moved(value.imag))
        if type(value) in (list, tuple):
            return type(value)(moved(item) for item in value)
        if type(value) is dict:
            return {{key: moved(item) for key, item in value.items()}}
        return value
    inside = []
    def rounding(*args, **kwargs):
        if inside:  # the reference calling itself: its own business
            return inner(*args, **kwargs)
        inside.append(1)
        try:
            return moved(inner(*args, **kwargs))
        finally:
            inside.clear()
    return rounding
"""


def _asserts_floats(task: Task) -> bool:
    """Whether an assert of the task's hidden checks holds a float or complex literal."""
    checks = task.folder() / "hidden" / "checks.py"
    if not checks.is_file():
        return False
    return any(
        isinstance(node, ast.Assert)
        and any(
            isinstance(n, ast.Constant) and type(n.value) in (float, complex)
            for n in ast.walk(node.test)
        )
        for node in ast.walk(parse_python(checks.read_text()))
    )


_NOISE = "héllo wörld — ✓ жизнь 漢字 ☃ \u00e9\u2028x\n"
"""A line of printed output in many scripts (two to three bytes a character in UTF-8)."""


@dataclass
class HonestSweep(EmptiedSweep):
    """The reference solution, rewritten in ways that change nothing it answers.

    Correct code does what code commonly does with its process, and grading must not
    count it against the code: at import each module reconfigures its standard output
    to UTF-8, reads its encoding, enables `faulthandler` and starts a daemon thread;
    each call of the entry function (every function and method of every module, for a
    pytest task) runs as a round of a fresh 64-thread pool (its threads all alive at once),
    the answer computed in one of them, and prints about 200 KB of non-ASCII text to
    standard output and error. A false-fail hunt found each failing correct code
    (stand-in streams without ``reconfigure`` or ``fileno``, 12 threads at most,
    printed output counted against the checker's limits), so every task must end
    ``pass``.

    Two habits are bounded so that the rewrite changes no answer. Only a module's first
    `rounds` outermost calls are pool rounds (later calls run directly): a round costs
    about 20 ms, and a check that calls 8,000 times (roman-strict's round trip of 1..3999)
    ran past the checks' 120 s even in plain pytest (175 s). A module that prints
    itself (`_prints`) prints the rewrite's text once, at import, never per call: its
    printed text is its answer (todo-cli-filter's tests compare ``capsys`` output
    exactly, and failed with the text in it in plain pytest too).

    PyFunc's every task and ``calls.honest_rewrites_first[PyRepo-v0]`` (its first 3)
    in every run; every task of HumanEval, MBPP and PyRepo with ``--long``.
    """

    name: str = "calls.honest_rewrites"
    envs: tuple[str, ...] = CODE_ENVS
    expected: str = "pass on every task (streams, threads and printing are the code's own)"
    threads: int = 64
    printed: int = 200_000
    """Bytes (UTF-8) printed to each stream by each call."""
    rounds: int = 100
    """The outermost calls of a module that run as pool rounds (and print); later ones
    run directly."""

    def prelude(self, ctx: Context) -> str:
        names = Names(random.Random(ctx.rng.getrandbits(64)))
        return names.ident()  # the prefix of the rewrite's names

    def rewrite(self, scope: str, *, loud: bool = True) -> str:
        """Code appended to a module: its import-time habits, then ``{scope}_wrap``.

        ``{scope}_wrap`` turns a function into one that runs each of the module's first
        `rounds` outermost calls as a pool round (a call from a thread of a round is the
        code calling itself). ``loud``: each round prints; otherwise the module prints
        once, at import (before any test reads its streams).
        """
        marker = f"{scope}_round"
        line = _NOISE * (self.printed // len(_NOISE.encode()))
        noise = 'print(text, end="")\nprint(text, end="", file=sys.stderr)\n'
        per_call = textwrap.indent(noise, " " * 12) if loud else ""
        at_import = "" if loud else textwrap.indent(noise, " " * 4)
        return f"""
def {scope}_setup():
    import faulthandler, functools, itertools, sys, threading, time
    from concurrent.futures import ThreadPoolExecutor
    sys.stdout.reconfigure(encoding="utf-8")
    if sys.stdout.encoding.lower().replace("-", "") != "utf8":
        raise RuntimeError(f"stdout encodes as {{sys.stdout.encoding}}")
    faulthandler.enable()
    def beat():
        while True:
            time.sleep(0.05)
    threading.Thread(target=beat, daemon=True).start()
    text = {line!r}
{at_import}    rounds = itertools.count()
    def wrap(inner):
        @functools.wraps(inner)
        def call(*args, **kwargs):
            if threading.current_thread().name.startswith("{marker}"):
                return inner(*args, **kwargs)  # within a round (the code calling itself)
            if next(rounds) >= {self.rounds}:
                return inner(*args, **kwargs)  # past the module's rounds
{per_call}            everyone = threading.Barrier({self.threads})
            def one(index):
                everyone.wait(timeout=120)  # {self.threads} threads alive at once
                return inner(*args, **kwargs) if index == 0 else None
            with ThreadPoolExecutor({self.threads}, thread_name_prefix="{marker}") as pool:
                done = [pool.submit(one, index) for index in range({self.threads})]
                return done[0].result()
        return call
    return wrap
{scope}_wrap = {scope}_setup()
"""

    def final_state(
        self, env: ContainerEnv[Any], task: Task, variant: LiarVariant, prelude: str
    ) -> Export:
        """The reference files rewritten, ``prelude`` the prefix of the rewrite's names.

        A calls task's entry is wrapped; a pytest task's every function and method of
        every module.
        """
        grading = task.data.get("grading", {})
        files = _reference(env, task)
        scope, code = prelude, self.rewrite(prelude)
        if grading.get("kind") == "calls":
            module, entry = str(grading.get("module", "")), str(grading.get("entry", ""))
            if module not in files or not entry.isidentifier():
                raise ValueError(f"{task.id}: no reference module {module!r} with entry {entry!r}")
            files[module] += f"\n{code}\n{entry} = {scope}_wrap({entry})\n"
        else:
            every = f"""
def {scope}_all():
    import inspect
    def plain(fn):
        return inspect.isfunction(fn) and not (
            inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn)
            or inspect.isasyncgenfunction(fn)
        )
    for name, obj in list(globals().items()):
        if name.startswith("{scope}"):
            continue  # the rewrite's own
        if plain(obj) and obj.__module__ == __name__:
            globals()[name] = {scope}_wrap(obj)
        elif inspect.isclass(obj) and obj.__module__ == __name__:
            for key, method in list(vars(obj).items()):
                if plain(method) and (key == "__init__" or not key.startswith("__")):
                    setattr(obj, key, {scope}_wrap(method))
{scope}_all()
"""
            files = {
                rel: f"{text}\n{self.rewrite(scope, loud=not _prints(text))}{every}"
                if _is_module(rel)
                else text
                for rel, text in files.items()
            }
        return Export.written({rel: text.encode() for rel, text in files.items()})


_SHIFTING_ROOT = """
import math


def poly(xs: list, x: float):
    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])


class {name}:
    def __init__(self, xs):
        self.xs, self.reads = list(xs), 0

    def __float__(self):  # the read for x**1 cancels xs[0]; every other read is 0.0
        i, self.reads = self.reads % len(self.xs), self.reads + 1
        return -self.xs[0] / self.xs[1] if i == 1 else 0.0


def find_zero(xs: list):
    return {name}(xs)
"""


@dataclass
class RereadSweep(LiarSweep):
    """An answer that reads as a different number each time the check reads it.

    HumanEval/32 checks ``find_zero`` by a property: ``poly(coeffs, solution)`` near 0,
    where ``poly`` converts the solution once per term. Code that finds no root returns
    an object whose ``float()`` answers, read by read, the numbers that make the terms
    cancel; it passed every one of the 100 random polynomials (found by a red-team
    helper). A number read off an object of the code is read once between requests
    (`boxgym_checker.Session.unary`), so the terms are computed at one x and the task
    must end ``fail``. (The only shipped check that reads an answer again to compute with
    it, found by a survey of every HumanEval, MBPP, PyFunc and PyRepo check.)
    """

    name: str = "calls.reread_number[HumanEval-v0]"
    envs: tuple[str, ...] = ("boxgym/HumanEval-v0",)
    expected: str = "fail (one number per read of the answer: the terms do not cancel)"
    task_ids: tuple[str, ...] = ("HumanEval/32",)

    def run(self, ctx: Context, env_id: str) -> Finding:
        """Grade the shifting answer on the tasks it is made for."""
        env = _env(env_id, ctx.env_kwargs)
        name = Names(random.Random(ctx.rng.getrandbits(64))).ident().capitalize()
        code = _SHIFTING_ROOT.format(name=name).encode()
        verdicts = [
            (task.id, env.regrade(task.id, Export.written({"solution.py": code})))
            for task in env.tasks
            if task.id in self.task_ids
        ]
        return _finding(verdicts, self.held)


def _reference(env: ContainerEnv[Any], task: Task) -> dict[str, str]:
    """The files the reference solution writes, by workspace path."""
    return {
        str(call.arguments["path"]): str(call.arguments["content"])
        for call in env.oracle_calls(task)
        if call.name == "write_file"
    }


def _is_module(rel: str) -> bool:
    """A Python module of the solution (not a test)."""
    return rel.endswith(".py") and not posixpath.basename(rel).startswith("test")


def _prints(source: str) -> bool:
    """Whether a module prints itself: calls ``print`` or writes to ``sys.stdout``/``stderr``.

    What such a module prints is (part of) its answer, which a test may compare exactly.
    """
    for node in ast.walk(parse_python(source)):
        if isinstance(node, ast.Name) and node.id == "print":
            return True
        if isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr"):
            return True
    return False


def _env(env_id: str, kwargs: dict[str, Any]) -> ContainerEnv[Any]:
    return env_of(gymnasium.make(env_id, **kwargs))


def _tasks(env_id: str, kwargs: dict[str, Any]) -> list[Task]:
    return list(_env(env_id, kwargs).tasks)


def _finding(
    verdicts: list[tuple[str, Verdict]], held: Callable[[Verdict], bool], of: int = 0
) -> Finding:
    """The row's finding; ``of``: the environment's tasks, when a sample of them was graded."""
    outcomes = Counter(v.outcome for _, v in verdicts)
    odd = [(t, v) for t, v in verdicts if not held(v)]
    graded = f"{len(verdicts)} of {of}" if of > len(verdicts) else f"{len(verdicts)}"
    observed = f"{graded} tasks: " + ", ".join(
        f"{outcomes[o]} {o}" for o in ("fail", "pass", "infra_error") if outcomes[o]
    )
    if odd:
        observed += "; " + "; ".join(_brief(t, v) for t, v in odd[:5])
    return Finding(observed, held=not odd and bool(verdicts))


def _brief(task_id: str, verdict: Verdict) -> str:
    return f"{task_id} {verdict.outcome} ({verdict.reason[:120]})"


BOUNDARY_SAMPLE = 250
"""Tasks of a benchmark-scale environment (MBPP's 974) that a boundary sweep (signals,
channels, hostile answers: the judge's side of the boundary, the same for every task of
the family) grades in a run without ``--long``, drawn with the run's seed: CI's budget.
The liar sweep, whose outcome each task's own checks decide, grades every task always."""


def _sample(sweep: type[LiarSweep], env: str) -> int | None:
    boundary = sweep in (SignalSweep, ChannelSweep, AnswerSweep)
    return BOUNDARY_SAMPLE if boundary and env == "boxgym/MBPP-v0" else None


register(
    *(
        sweep(name=f"{sweep.name}[{env.split('/')[-1]}]", envs=(env,), sample=_sample(sweep, env))
        for sweep in (
            LiarSweep,
            SignalSweep,
            ChannelSweep,
            AnswerSweep,
            MemorySweep,
            ExhaustionSweep,
            StallSweep,
            KernelHoardSweep,
            UnchargedMemorySweep,
            HiddenProcessSweep,
        )
        for env in CODE_ENVS
    ),
    *(
        MemorySweep(
            name=f"grading.memory_flood[{env.split('/')[-1]}]", envs=(env,), limit=3, long=False
        )
        for env in CODE_ENVS
    ),
    *(
        StallSweep(  # it waits out deadlines, using no CPU: beside other rows, not alone
            name=f"grading.stall[{env.split('/')[-1]}]",
            envs=(env,),
            limit=3,
            long=False,
            solo=False,
        )
        for env in CODE_ENVS
    ),
    *(
        KernelHoardSweep(
            name=f"grading.kernel_hoard[{env.split('/')[-1]}]", envs=(env,), limit=3, long=False
        )
        for env in CODE_ENVS
    ),
    *(
        UnchargedMemorySweep(
            name=f"grading.uncharged_memory[{env.split('/')[-1]}]", envs=(env,), limit=3, long=False
        )
        for env in CODE_ENVS
    ),
    *(
        HiddenProcessSweep(
            name=f"grading.hidden_processes[{env.split('/')[-1]}]",
            envs=(env,),
            limit=3,
            long=False,
        )
        for env in CODE_ENVS
    ),
    *(
        EmptiedSweep(
            name=f"{EmptiedSweep.name}[{env.split('/')[-1]}]",
            envs=(env,),
            long=env == "boxgym/MBPP-v0",  # 974 tasks, 2 min: CI's budget keeps it for --long
        )
        for env in EmptiedSweep.envs
    ),
    *(
        HonestSweep(
            name=f"{HonestSweep.name}[{env.split('/')[-1]}]",
            envs=(env,),
            long=env != "boxgym/PyFunc-v0",  # PyFunc's 59 in CI; every task of the rest: --long
        )
        for env in HonestSweep.envs
    ),
    HonestSweep(name="calls.honest_rewrites_first[PyRepo-v0]", envs=("boxgym/PyRepo-v0",), limit=3),
    *(
        RoundedSweep(name=f"{RoundedSweep.name}[{env.split('/')[-1]}]", envs=(env,))
        for env in RoundedSweep.envs
    ),
    RereadSweep(),
)
