"""boxgym's trusted grading runner (standard library only; copied in at grading time).

Runs as root, with only the SETUID and SETGID capabilities, as the main process of a
fresh grading container. Three kinds of processes, each a uid of its own drawn at
random for this grading (no other container shares them):

* the **checker** (``boxgym_checker``): runs the hidden checks, never imports the code
  under test; only it can read the hidden checks (``/grade/tests``, 0700). It is a fork
  of the runner (trusted, so it may inherit the runner's memory) that keeps only the
  descriptors it is handed;
* the **worker** (``boxgym_worker``): the only process that imports the code under
  test, always a fresh interpreter (it never holds what the runner read); a new worker
  (and uid) replaces one that hung, died or lied; it runs with a process limit, an
  address-space limit and the highest OOM score, so that a fork or memory bomb cannot
  starve the runner;
* **probes**: shell commands a task declares, run first, before any code under test.

The checker reaches the worker through one socket the runner hands it for each worker
(values cross as plain data, objects as handles; see ``boxgym_wire``). The checker
streams each test's outcome to the runner over a pipe no worker holds; the runner
alone writes the report, into a root-only directory created after the agent phase.
A missing report therefore means the grader itself failed.

Usage: python3 -I boxgym_runner.py --spec SPEC.json --out REPORT.json
"""

import _signal as signal  # the modules without their enums: a runner starts in every grading
import _socket as socket
import _thread
import fcntl
import os
import resource
import select
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import boxgym_wire as wire  # noqa: E402
from boxgym_memory import Kills, memory_limit  # noqa: E402
from boxgym_wire import NotPrimitive, decode, encode  # noqa: E402, F401  (the codec's home)

VERSION = "2"
PYTHON = "/usr/bin/python3"
WORKER_NPROC = 96
WORKER_MEMORY = 768 << 20
WORKER_ENV = {"MALLOC_ARENA_MAX": "1"}
"""The worker's (and probes') environment beyond the common one. glibc gives each thread
that mallocs an arena of its own up to 8 per CPU, each reserving 64 MiB of address space:
under `WORKER_MEMORY` only a dozen threads could start (``can't start new thread``). One
arena is all a Python process needs (its objects come from its own allocator, under the
GIL); with the worker's 4 MiB thread stacks, threads up to its process limit fit."""
CHECKER_MEMORY = 384 << 20
"""The checker's heap and other private memory (its peak under the memory rows: ~220 MiB)."""
CHECKER_THREAD_STACK = 2 << 20
"""A hidden test's threads' stacks (8 MiB by default: 40 threads would fill the limit)."""
_WORKER_BOOT = (
    "import os, sys; sys.path.insert(0, os.environ['BOXGYM_RUNNER_DIR']); import boxgym_worker; "
    "sys.path.pop(0); boxgym_worker.main(int(sys.argv[1]))"
)
_KEEP_OUT = {"pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging", "attr"}
_KEEP_OUT |= {"grade", "workspace"}  # the test files' own packages (grade.tests.*)


class Uids:
    """The uids of one grading: checker, probes, and one per worker generation."""

    def __init__(self):
        base = (1 << 24) + (int.from_bytes(os.urandom(3), "big") % (1 << 22) << 8)  # < 2**31
        self.checker, self.probe, self.base = base, base + 1, base + 2

    def worker(self, gen):
        return self.base + gen


# -- processes ---------------------------------------------------------------------------


def become(uid):
    """Drop to uid (and the same gid), with no supplementary groups; never return root."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    if os.getuid() == 0 or os.geteuid() == 0:
        raise PermissionError(f"still root after dropping to uid {uid}")


def _limit_worker(spec):
    """The worker's limits: processes (per uid), address space, no core files, OOM first.

    It also gets the lowest CPU priority: a fork bomb of spinning processes cannot starve
    the checker or the runner of the container's CPU share (it ends as the code's fail, not
    as a grading timeout).
    """
    nproc = int(spec.get("worker_nproc", WORKER_NPROC))
    memory = int(spec.get("worker_memory", WORKER_MEMORY))
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with open("/proc/self/oom_score_adj", "w") as fh:
        fh.write("1000")
    os.nice(19)


def _limit_checker(spec):
    """The checker's private memory: less than the container has left for it.

    The code under test can fill the container's writable mounts (their pages count
    against the container's memory) and can make the checks read without bound: a file
    it wrote that a test reads back may be a link to /dev/zero or a sparse terabyte. The
    checker then gets a MemoryError in that test, which fails it, before the kernel would
    kill the checker at the container's limit (a grading without a report: infra_error).
    """
    memory = int(spec.get("checker_memory", CHECKER_MEMORY))
    resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
    _thread.stack_size(CHECKER_THREAD_STACK)  # the limit counts each thread's whole stack


def spawn(argv, uid, *, cwd, env, fds=(), stdout=None, setup=None):
    """Fork a child that becomes uid and execs argv; ``fds`` are (fd, number) to pass.

    ``argv`` may instead be a function, run in the child without an exec (its return
    value is the exit status): only for trusted code (the checker), which then inherits
    this process's memory and imports. The code under test always gets a fresh
    interpreter, which has never held what this process read.

    Raises:
        RuntimeError: the child failed before it ran argv (its limits, its uid, its
            descriptors): a fault of the grading's, never the code's (the child tells it
            over a pipe that closes by itself once argv runs, as subprocess does).
    """
    told, tell = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid != 0:
        os.close(tell)
        failed = os.read(told, 200)  # nothing: the exec closed the pipe (or argv began)
        os.close(told)
        if failed:
            os.waitpid(pid, 0)
            raise RuntimeError(f"could not start a child as uid {uid}: {failed.decode()}")
        return pid
    try:
        os.close(told)
        high = fcntl.fcntl(tell, fcntl.F_DUPFD_CLOEXEC, 64)  # clear of the numbers handed
        os.close(tell)
        tell = high
        os.setsid()
        os.chdir(cwd)
        if setup is not None:
            setup()
        become(uid)
        null = os.open(os.devnull, os.O_RDWR)
        wanted = [(null, 0), (stdout if stdout is not None else null, 1)]
        wanted += [(wanted[1][0], 2), *fds]
        high = [(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64), n) for fd, n in wanted]
        for fd, number in high:
            os.dup2(fd, number)
        if callable(argv):
            os.close(tell)
            os._exit(_run_here(argv, env, {number for _, number in wanted}))
        os.execve(argv[0], argv, env)
    except BaseException as exc:
        try:
            os.write(tell, f"{type(exc).__name__}: {exc}"[:200].encode("ascii", "replace"))
        finally:
            os._exit(98)


def _run_here(fn, env, kept):
    """Run fn in a forked child as a new interpreter would run it; its exit status.

    The child keeps only the descriptor numbers in ``kept`` (those it was handed), gets
    the given environment and the site folders on its path, and flushes its streams.
    """
    for fd in map(int, os.listdir("/proc/self/fd")):  # not closerange: without close_range
        if fd not in kept:  # (kernels before 5.9) it tries every number up to the limit
            try:
                os.close(fd)
            except OSError:
                pass  # the listing's own descriptor, closed already
    os.environ.clear()
    os.environ.update(env)
    time.tzset()
    if "site" not in sys.modules:  # the boot runs without site; pytest lives there
        import site

        site.main()
    try:
        status = fn()
    except SystemExit as stop:
        status = 0 if stop.code is None else stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    _flush()
    return status


def _flush():
    """Flush this process's standard streams (before a fork, or an exit without teardown)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def _checker():
    import boxgym_checker

    return boxgym_checker.main(3, 4)


def kill_uid(uid, sig=signal.SIGKILL):
    """Signal every live process of uid (the runner is root and survives), until none is left.

    The signaller sends as uid (the runner has no CAP_KILL) with its real and saved uid
    left root: uid's processes may signal it only if one of those were uid, so they can
    neither stop nor kill it (a stopped signaller would hang the grading into an
    infra_error). Only the runner and the signaller are root while it runs. Zombies (dead
    children the runner has not reaped yet) are not waited for.
    """
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresuid(0, uid, 0)
            for _ in range(1000):
                live = _live_processes(uid)
                for target in live:
                    try:
                        os.kill(target, sig)
                    except OSError:  # gone since the scan
                        pass
                if not live or sig != signal.SIGKILL:
                    break
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _live_processes(uid):
    """Pids of uid's processes with a live thread (the caller's own excluded).

    A zombie is skipped only when its leader is all that is left of it: a main thread
    that ends alone (the exit system call, not exit_group) leaves a zombie whose other
    threads run on and hold their pids. A red-team helper's code did that in each worker
    until the container's process limit refused the grading script's own fork
    (infra_error). The status is read as bytes, since the process names it (its comm)
    any bytes it likes: one that did not decode stopped every later kill (a helper).
    """
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            owner, zombie = _owner_and_state(entry)
        except OSError:
            continue  # gone
        if owner != uid:
            continue
        try:
            if zombie and len(os.listdir(f"/proc/{entry}/task")) < 2:
                continue
        except OSError:
            continue
        found.append(int(entry))
    return found


def _owner_and_state(pid):
    """A process's real uid and whether it is a zombie, from /proc/PID/status (bytes).

    Only the kernel's own lines are read (their names start a line, and a name the
    process chose cannot hold a newline); a line that does not parse is no answer.
    """
    with open(f"/proc/{pid}/status", "rb") as fh:
        lines = fh.read().split(b"\n")
    fields = dict(line.split(b":", 1) for line in lines if b":" in line)
    try:
        owner = int(fields[b"Uid"].split()[0])
        zombie = fields[b"State"].strip().startswith(b"Z")
    except (KeyError, IndexError, ValueError):
        raise OSError(f"/proc/{pid}/status did not parse") from None
    return owner, zombie


def private_dir(path, uid, mode=0o700):
    """A folder in /tmp (sticky, world-writable) created by uid itself: no CAP_CHOWN needed."""
    pid = os.fork()
    if pid == 0:
        try:
            become(uid)
            os.mkdir(path, mode)
            os.chmod(path, mode)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    if os.stat(path).st_uid != uid:
        raise RuntimeError(f"could not create {path} for uid {uid}")
    return path


def worker_home(uid):
    """A new home for a worker, at a name no earlier worker could guess; None if /tmp is full.

    /tmp is shared with the workers before it: a name one of them could predict may be
    taken, and a /tmp they filled has no room. Neither may stop the grading (the code
    under test caused it): the worker then runs with a home it cannot write.
    """
    for _ in range(3):
        try:
            return private_dir(f"/tmp/boxgym-home-{os.urandom(12).hex()}", uid)
        except OSError:
            continue
        except RuntimeError:
            continue
    return None


def share_with_group(top, gid):
    """Give a root-owned tree to group gid, readable by it alone (root's own chgrp right)."""
    os.setgroups([gid])
    try:
        for root, _, files in os.walk(top):
            for path in (root, *(os.path.join(root, f) for f in files)):
                os.chown(path, -1, gid, follow_symlinks=False)
                os.chmod(path, 0o750 if path == root else 0o640)
    finally:
        os.setgroups([])


def wait_with_timeout(pid, seconds):
    """Exit status of a child, or None if it outlived its timeout."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    return None


# -- staging ------------------------------------------------------------------------------


def prepare(spec, uids):
    """Permissions: hidden checks readable by the checker only; the spec by root only."""
    os.chmod("/grade", 0o711)
    os.chmod("/grade/spec.json", 0o600)
    share_with_group("/grade/tests", uids.checker)
    tag = os.urandom(8).hex()
    home = private_dir(f"/tmp/boxgym-checker-{tag}", uids.checker, 0o711)
    return {"home": home, "tag": tag}


def project_modules(paths):
    """Top-level module and package names the configured python_paths offer."""
    names = set()
    for folder in paths:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            full = os.path.join(folder, entry)
            if entry.endswith(".py") and os.path.isfile(full):
                names.add(entry[:-3])
            elif os.path.isdir(full) and _has_python(full):
                names.add(entry)
    return sorted(
        n
        for n in names
        if n.isidentifier()
        and n not in sys.stdlib_module_names
        and n not in _KEEP_OUT
        and not n.startswith("boxgym_")
    )


def _has_python(folder):
    try:
        return any(e.endswith(".py") for e in os.listdir(folder))
    except OSError:
        return False


# -- probes: named boolean checks on the final state, before any code under test ran ------


def run_probes(spec, uids):
    """Run each probe (a shell command, as the probe uid) and record whether it exited 0.

    A probe's command may run the code under test (the task's author chooses it), so it
    runs under the worker's limits: a fork or memory bomb in it is that probe's fail,
    never a grading that cannot finish.
    """
    results = {}
    if not spec.get("probes"):
        return results
    home = private_dir(f"/tmp/boxgym-probe-{os.urandom(8).hex()}", uids.probe)
    env = wire.environment({"HOME": home, **WORKER_ENV})
    for probe in spec["probes"]:
        argv = ["/bin/sh", "-c", probe["command"]]
        pid = spawn(argv, uids.probe, cwd=spec["cwd"], env=env, setup=lambda: _limit_worker(spec))
        code = wait_with_timeout(pid, probe.get("timeout", 30))
        kill_uid(uids.probe)
        if code is None:
            os.waitpid(pid, 0)
        results[probe["name"]] = (
            "timed_out" if code is None else ("passed" if code == 0 else "failed")
        )
    return results


# -- the checks: the checker, its workers, its outcomes -----------------------------------


class Supervisor:
    """The runner's side of a checking session: starts workers, collects outcomes."""

    def __init__(self, spec, uids, staging):
        self.spec, self.uids, self.staging = spec, uids, staging
        self.gen, self.worker = 0, None
        self.workers, self.cleared = {}, set()
        self.events, self.forged = [], 0
        self.buf, self.out = b"", b""
        self.checker = self.checker_status = None
        self.checker_peak = 0  # bytes of resident memory the checker held at most (once reaped)
        self.t0 = time.monotonic()
        self.marks = {}

    def checker_spec(self):
        spec = self.spec
        common = {
            "kind": spec["kind"],
            "call_timeout": spec.get("call_timeout", 10),
            "frozen_time": spec.get("frozen_time"),
            "python_paths": spec["python_paths"],
            "unsafe_in_process": bool(spec.get("unsafe_in_process")),
        }
        if spec["kind"] == "calls":
            common.update(
                checks=spec["checks"],
                module_name="solution",
                aliases={"solution": spec["module"]},
                modules=["solution"],
                entry=spec["entry"],
                tests=list(spec["tests"]),
            )
        else:
            common.update(
                config=spec["config"],
                rootdir=spec["rootdir"],
                test_files=list(spec["test_files"]),
                modules=project_modules(spec["python_paths"]),
                basetemp=os.path.join(self.staging["home"], "pytest"),
            )
        return common

    def start_checker(self, event_w, out_w, ctl):
        env = wire.environment({"HOME": self.staging["home"]})
        fds = [(event_w, 3), (ctl.fileno(), 4)]
        _flush()  # the checker is a fork of this process: nothing of ours to repeat
        self.checker = spawn(
            _checker,
            self.uids.checker,
            cwd=self.staging["home"],
            env=env,
            fds=fds,
            stdout=out_w,
            setup=lambda: _limit_checker(self.spec),
        )

    def start_worker(self):
        """A new worker generation, its end of a fresh socket handed back for the checker."""
        self.marks.setdefault("first_worker_s", round(time.monotonic() - self.t0, 3))
        for gen in [g for g in self.workers if g not in self.cleared]:
            kill_uid(self.uids.worker(gen))
            self.cleared.add(gen)  # a uid is never reused: once empty, it stays empty
        self.gen += 1
        uid = self.uids.worker(self.gen)
        home = worker_home(uid) or "/nonexistent"
        settings = {"python_paths": self.spec["python_paths"]}
        settings["frozen_time"] = self.spec.get("frozen_time")
        env = wire.environment({"HOME": home, "BOXGYM_WORKER": wire.dumps(settings), **WORKER_ENV})
        mine, theirs = socket.socketpair()
        argv = [PYTHON, "-I", "-c", _WORKER_BOOT, "3"]
        pid = spawn(
            argv,
            uid,
            cwd=self.spec["cwd"],
            env=env,
            fds=[(theirs.fileno(), 3)],
            setup=lambda: _limit_worker(self.spec),
        )
        theirs.close()
        self.workers[self.gen] = pid
        return mine

    def control(self, ctl):
        """Answer the checker's requests: a new worker (its socket passed), or a kill."""
        data = ctl.recv(4096)
        if not data:
            return False
        for line in data.splitlines():
            request = wire.loads(line)
            if request.get("op") == "spawn":
                mine = self.start_worker()
                wire.send_fd(ctl, b'{"ok": true}\n', mine.fileno())
                mine.close()
            elif request.get("op") == "kill":
                kill_uid(self.uids.worker(self.gen))
                self.cleared.add(self.gen)
        return True

    def read_events(self, fd):
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return False
        self.buf += chunk
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            try:
                event = wire.loads(line)
            except ValueError:
                self.forged += 1
                continue
            if isinstance(event, dict):
                self.events.append(event)
        return True

    def read_output(self, fd):
        chunk = os.read(fd, 1 << 16)
        self.out = (self.out + chunk)[-8000:]
        return bool(chunk)

    def reap(self):
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.checker:
                self.checker_status = os.waitstatus_to_exitcode(status)
                self.checker_peak = usage.ru_maxrss * 1024
            for gen, wpid in self.workers.items():
                if wpid == pid:
                    self.workers[gen] = None
                    self.last_worker_exit = os.waitstatus_to_exitcode(status)

    def cleanup(self, out_r):
        if self.checker_status is None:  # still running: where is it? (faulthandler, SIGUSR1)
            kill_uid(self.uids.checker, signal.SIGUSR1)
            deadline = time.monotonic() + 1
            while time.monotonic() < deadline and select.select([out_r], [], [], 0.1)[0]:
                if not self.read_output(out_r):
                    break
            kill_uid(self.uids.checker)
        for gen in [g for g in self.workers if g not in self.cleared]:
            kill_uid(self.uids.worker(gen))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (
            self.checker_status is None or any(self.workers.values())
        ):
            self.reap()
            time.sleep(0.01)

    last_worker_exit = None


def grading_held(sup):
    """Bytes of resident memory the grading's own processes held at most.

    The checker's peak (once reaped) and this script's.
    """
    return sup.checker_peak + resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_session(spec, uids, staging, kills):
    """Run the checker until it finishes or the checks' time is up; its outcomes, collected.

    ``kills`` counts the kernel's kills for want of memory since before the probes.
    """
    sup = Supervisor(spec, uids, staging)
    budget = spec.get("timeout", 300)
    start, cpu_start, starving = time.monotonic(), wire.container_cpu(), wire.Starving()
    event_r, event_w = os.pipe()
    out_r, out_w = os.pipe()
    ctl, ctl_checker = socket.socketpair()
    sup.start_checker(event_w, out_w, ctl_checker)
    for fd in (event_w, out_w):
        os.close(fd)
    ctl_checker.close()
    ctl.sendall(wire.dumps(sup.checker_spec()).encode() + b"\n")
    open_fds, timed_out = {event_r, out_r, ctl.fileno()}, False
    while open_fds:
        took = time.monotonic() - start
        if cpu_start is not None and took >= wire.WATCH_AFTER:
            starving.watch(took)  # at most once a slice, however many events arrive
        remaining = budget - (took - starving.excluded)
        if remaining <= 0 or _spent(cpu_start, took) >= budget:
            timed_out = True
            break
        ready, _, _ = select.select(list(open_fds), [], [], min(remaining, 0.5))
        for fd in ready:
            ok = (
                sup.read_events(fd)
                if fd == event_r
                else sup.read_output(fd)
                if fd == out_r
                else sup.control(ctl)
            )
            if not ok:
                open_fds.discard(fd)
        sup.reap()
    sup.cleanup(out_r)
    for fd in (event_r, out_r):
        os.close(fd)
    ctl.close()
    killed, host = kills.since(), kills.by_the_host()
    if host is not None:
        result = summarise(sup, timed_out)
        result["error"] = host
        return result
    limit, held = memory_limit(), grading_held(sup)
    memory_killed = bool(killed) and limit is not None and held <= limit // 2
    if memory_killed:
        sup.events.append(
            {
                "event": "finding",
                "name": "resource_limit",
                "detail": f"the kernel killed {killed} process(es) of the "
                "grading at the container's memory limit",
                "test": "session",
            }
        )
    result = summarise(sup, timed_out, memory_killed)
    if killed and not memory_killed:  # the grading's own share was not kept: ours
        result["error"] = (
            f"the kernel killed at the container's memory limit ({limit} bytes) while the "
            f"grading's own processes held {held} bytes"
        )
    return result


def _spent(cpu_start, took):
    """What the session has taken of its budget: the container's CPU since it began.

    The host's load does not use it up; nor does it use up the session's wall-clock
    budget, which counts ``took`` less what the container waited for a CPU
    (`wire.Starving`). Without a CPU count, ``took``: the time since the start.
    """
    now = wire.container_cpu()
    if cpu_start is None or now is None:
        return took
    return now - cpu_start


def summarise(sup, timed_out, memory_killed=False):
    """The report of a session: its tests' outcomes, findings, and an error if ours.

    A checker that ended unfinished is an error of the grading (``infra_error``) unless
    the kernel killed at the container's memory limit while the grading's own processes
    kept within their share, half the container's memory (the checker's address-space
    limit keeps it below): then what filled the rest is the code under test's, whichever
    process the kernel chose (the code can lower its OOM score again and hold memory, a
    memfd, that no process is charged with), and the session's ``resource_limit``
    finding fails it (`run_session` decides ``memory_killed``).
    """
    phases, finished, findings, import_error, status = {}, False, [], None, None
    for ev in sup.events:
        if ev.get("event") == "finished":
            finished, status = True, ev.get("exitstatus")
        elif ev.get("event") == "finding" and len(findings) < MAX_FINDINGS:
            findings.append({k: str(ev.get(k, ""))[:300] for k in ("name", "detail", "test")})
        elif ev.get("event") == "import_error":
            import_error = str(ev.get("detail"))[:1000]
        elif ev.get("event") == "collected" and isinstance(ev.get("id"), str):
            phases.setdefault(ev["id"], {})
        elif isinstance(ev.get("id"), str):
            phases.setdefault(ev["id"], {})[ev.get("when")] = ev.get("outcome")
    result = {
        "tests": {node: final_outcome(p) for node, p in phases.items()},
        "finished": finished,
        "worker_exit": sup.last_worker_exit,
        "timed_out": timed_out,
        "forged_lines": sup.forged,
        "findings": findings,
        "import_error": import_error,
        "checker_exit": sup.checker_status,
        "timings": {**sup.marks, "session_s": round(time.monotonic() - sup.t0, 3)},
        "session_status": status,
        "log": sup.out.decode("utf-8", "replace")[-6000:],
        "error": None,
    }
    if not finished and not timed_out and not memory_killed:
        tail = sup.out.decode("utf-8", "replace")[-3000:]
        result["error"] = f"the checker ended without finishing (exit {sup.checker_status}): {tail}"
    return result


def final_outcome(phases):
    """One outcome from setup/call/teardown outcomes.

    A test passes only if its call did and every phase it began reported: a test that
    set up and never reported its teardown (the grading's time ran out in it) is
    ``unfinished``, whatever its call said, and one collected that never reported
    (the run ended before it) is ``missing``.
    """
    if not phases:
        return "missing"  # collected, never reported
    outcomes = set(phases.values())
    if "failed" in outcomes:
        return "failed"
    if "skipped" in outcomes:
        return "skipped"
    if "missing" in outcomes:
        return "missing"
    if phases.get("call") != "passed":
        return "failed"
    return "unfinished" if "setup" in phases and "teardown" not in phases else "passed"


MAX_FINDINGS = 100


def clean(value):
    """The report with every text readable by any JSON parser: no lone surrogate.

    Texts in it come from the code under test (an exception's message, printed output,
    test ids made from its values); whatever they hold, the report stays readable, so
    that no text of the code can turn its verdict into the grader's fault.
    """
    if isinstance(value, str):
        return wire.clean_text(value)
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, dict):
        return {clean(str(k)): clean(v) for k, v in value.items()}
    return value


# -- main ---------------------------------------------------------------------------------


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 4 or args[0] != "--spec" or args[2] != "--out":  # no argparse: 4 ms
        sys.exit("usage: python3 -I boxgym_runner.py --spec SPEC.json --out REPORT.json")
    spec_path, out_path = args[1], args[3]
    with open(spec_path) as fh:
        spec = wire.loads(fh.read())
    start = time.monotonic()
    report = {"runner": "boxgym_runner", "version": VERSION, "kind": spec.get("kind")}
    try:
        if spec["kind"] not in ("pytest", "calls"):
            raise ValueError(f"unknown kind {spec['kind']!r}")
        uids, kills = Uids(), Kills()  # the probes' kills count too (they run the code)
        staging = prepare(spec, uids)
        probes = run_probes(spec, uids)
        report.update(run_session(spec, uids, staging, kills), probes=probes)
    except Exception:
        import traceback

        report.update(error=traceback.format_exc()[-4000:])
    report["duration_s"] = round(time.monotonic() - start, 3)
    tmp = out_path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(wire.dumps(clean(report)))
    os.rename(tmp, out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
