"""boxgym's trusted grading runner (standard library only; copied in at grading time).

Runs as root, with only the SETUID and SETGID capabilities, in a fresh grading
container. The code under test runs in a worker process that has dropped to an
unprivileged uid; the worker cannot write the report directory (root-owned, 0700),
cannot signal or trace the runner, and never holds expected values.

Two kinds of checks:

* ``pytest``: the worker runs pytest (plugin autoload off, no conftest, pristine
  config and rootdir, ``python -I``) and streams each test's outcome over a pipe.
* ``calls``: the trusted check functions run here, in the runner; the function under
  test is a proxy that calls into the worker, with arguments and results crossing
  as strictly typed primitives. An object whose ``__eq__`` lies never crosses.

The report (JSON) goes to ``--out`` in a directory created after the agent phase.
The runner writes it in every case it survives, including when the worker ended
itself early; a missing report therefore means the grader itself failed.

Usage: python3 -I boxgym_runner.py --spec SPEC.json --out REPORT.json
"""

import json
import math
import os
import select
import signal
import sys
import time

VERSION = "1"
WORKER_UID = 1000
MAX_DEPTH = 64
MAX_ITEMS = 100_000


# -- strict serialisation of values crossing the worker boundary -----------------------


class NotPrimitive(TypeError):
    """A value of a type that cannot cross the boundary."""


def encode(value, depth=0):
    """Encode a value of an exact builtin type into tagged JSON."""
    if depth > MAX_DEPTH:
        raise NotPrimitive("value nested too deeply")
    t = type(value)
    if value is None or t is bool or t is str:
        return {"t": t.__name__, "v": value}
    if t is int:
        return {"t": "int", "v": format(value, "x")}  # hex: no 4300-digit str() limit
    if t is float:
        return {"t": "float", "v": repr(value)}
    if t is complex:
        return {"t": "complex", "v": [repr(value.real), repr(value.imag)]}
    if t is bytes:
        return {"t": "bytes", "v": value.hex()}
    if t in (list, tuple, set, frozenset):
        if len(value) > MAX_ITEMS:
            raise NotPrimitive("collection too large")
        items = [encode(v, depth + 1) for v in value]
        return {"t": t.__name__, "v": items}
    if t is dict:
        if len(value) > MAX_ITEMS:
            raise NotPrimitive("dict too large")
        return {
            "t": "dict",
            "v": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()],
        }
    raise NotPrimitive(f"a value of type {t.__module__}.{t.__qualname__} cannot be checked")


def decode(obj):
    """Decode tagged JSON back into exact builtin values."""
    t, v = obj["t"], obj["v"]
    if t in ("NoneType", "bool", "str"):
        return v
    if t == "int":
        return int(v, 16)
    if t == "float":
        return float(v)
    if t == "complex":
        return complex(float(v[0]), float(v[1]))
    if t == "bytes":
        return bytes.fromhex(v)
    if t in ("list", "tuple", "set", "frozenset"):
        items = [decode(x) for x in v]
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[t](items)
    if t == "dict":
        return {decode(k): decode(x) for k, x in v}
    raise ValueError(f"unknown tag {t!r}")


# -- a frozen clock for tasks that need one ---------------------------------------------


def freeze_clock(epoch):
    """Make time.time() and datetime's now/today/utcnow return one fixed instant.

    Called by the worker before any code under test is imported, so that a later
    ``from datetime import datetime`` gets the frozen class. Monotonic clocks stay real.
    """
    import datetime as dt

    fixed = float(epoch)
    time.time = lambda: fixed
    time.time_ns = lambda: int(fixed * 1_000_000_000)

    class FrozenDateTime(dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return cls.fromtimestamp(fixed, tz)

        @classmethod
        def utcnow(cls):
            return cls.fromtimestamp(fixed, dt.UTC).replace(tzinfo=None)

        @classmethod
        def today(cls):
            return cls.fromtimestamp(fixed)

    class FrozenDate(dt.date):
        @classmethod
        def today(cls):
            return cls.fromtimestamp(fixed)

    dt.datetime, dt.date = FrozenDateTime, FrozenDate


# -- the worker: drop privileges, then exec the untrusted side -----------------------


def drop_privileges():
    os.setgroups([])
    os.setgid(WORKER_UID)
    os.setuid(WORKER_UID)
    if os.getuid() == 0 or os.geteuid() == 0:
        os._exit(99)


def spawn_worker(argv, cwd, pass_fds, env, stdin_data=None):
    """Fork a worker that drops to WORKER_UID and execs argv; returns its pid.

    ``stdin_data`` (a short secret) is written to the worker's standard input, which is
    then closed; the worker reads it before any untrusted code is imported.
    """
    secret_r = secret_w = None
    if stdin_data is not None:
        secret_r, secret_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(cwd)
            drop_privileges()
            devnull = os.open(os.devnull, os.O_RDWR)
            os.dup2(secret_r if secret_r is not None else devnull, 0)
            log = os.open("/tmp/boxgym-worker.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(log, 1)
            os.dup2(log, 2)
            for fd in pass_fds:
                os.set_inheritable(fd, True)
            os.execve(argv[0], argv, env)
        except BaseException:
            os._exit(98)
    if secret_r is not None:
        os.close(secret_r)
        os.write(secret_w, stdin_data + b"\n")
        os.close(secret_w)
    return pid


def kill_worker_uid():
    """Kill every process of the worker uid (the runner itself is root and survives)."""
    pid = os.fork()
    if pid == 0:
        try:
            drop_privileges()
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def reap(pid):
    """Wait for the worker; return its exit status (negative: killed by that signal)."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    return os.waitstatus_to_exitcode(status)


def worker_env(spec):
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "BOXGYM_PATHS": json.dumps(spec.get("python_paths", [])),
        "BOXGYM_FROZEN_TIME": str(spec.get("frozen_time") or ""),
        "BOXGYM_RUNNER_DIR": os.path.dirname(os.path.abspath(__file__)),
    }


# -- pytest kind -------------------------------------------------------------------------


PYTEST_BOOT = r"""
import json, os, sys
_tag = sys.stdin.buffer.readline().strip().decode()
os.close(0)
fd = int(sys.argv[1])
out = os.fdopen(fd, "w", buffering=1)
import pytest
if os.environ.get("BOXGYM_FROZEN_TIME"):
    sys.path.insert(0, os.environ["BOXGYM_RUNNER_DIR"])
    import boxgym_runner
    sys.path.pop(0)
    boxgym_runner.freeze_clock(os.environ["BOXGYM_FROZEN_TIME"])
def _emit(event, tag=_tag):
    out.write(tag + " " + json.dumps(event) + "\n")
del _tag
class BoxgymReport:
    def pytest_runtest_logreport(self, report):
        skipped = report.skipped or (report.outcome == "passed" and hasattr(report, "wasxfail"))
        outcome = "skipped" if skipped else report.outcome
        _emit({"id": report.nodeid, "when": report.when, "outcome": outcome})
    def pytest_collectreport(self, report):
        if report.failed or report.skipped:
            outcome = "failed" if report.failed else "skipped"
            _emit({"id": report.nodeid, "when": "collect", "outcome": outcome})
    def pytest_sessionfinish(self, session, exitstatus):
        _emit({"event": "finished", "exitstatus": int(exitstatus)})
        out.flush()
sys.path[:0] = json.loads(os.environ["BOXGYM_PATHS"])
args = sys.argv[2:]
code = pytest.main(args, plugins=[BoxgymReport()])
"""


def run_pytest(spec):
    read_fd, write_fd = os.pipe()
    args = [
        "/usr/bin/python3",
        "-I",
        "-c",
        PYTEST_BOOT,
        str(write_fd),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--noconftest",
        "-c",
        spec["config"],
        "--rootdir",
        spec["rootdir"],
        "-o",
        "addopts=",
        "--import-mode=importlib",
        "-q",
        "-rN",
        "--color=no",
        "-W",
        "ignore::DeprecationWarning",
        *spec["test_files"],
    ]
    tag = os.urandom(16).hex()
    pid = spawn_worker(args, spec["cwd"], [write_fd], worker_env(spec), tag.encode())
    os.close(write_fd)
    events, timed_out, forged = read_lines(
        read_fd, time.monotonic() + spec.get("timeout", 300), tag
    )
    os.close(read_fd)
    if timed_out:
        kill_worker_uid()
    code = reap(pid)
    kill_worker_uid()
    phases, finished = {}, False
    for ev in events:
        if ev.get("event") == "finished":
            finished = True
        elif isinstance(ev.get("id"), str):
            phases.setdefault(ev["id"], {})[ev.get("when")] = ev.get("outcome")
    tests = {node: final_outcome(p) for node, p in phases.items()}
    return {
        "tests": tests,
        "finished": finished,
        "worker_exit": code,
        "timed_out": timed_out,
        "forged_lines": forged,
    }


def final_outcome(phases):
    """One outcome from setup/call/teardown outcomes: a test passes only if its call did."""
    outcomes = set(phases.values())
    if "failed" in outcomes:
        return "failed"
    if "skipped" in outcomes:
        return "skipped"
    return "passed" if phases.get("call") == "passed" else "failed"


def read_lines(fd, deadline, tag):
    """Read the tagged JSON lines from fd until EOF or the deadline.

    Returns (events, timed_out, forged): lines without this run's secret tag are not
    events; they are counted as forgery attempts (only code under test writes them).
    """
    buf, events, forged = b"", [], 0
    prefix = tag.encode() + b" "
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return events, True, forged
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if not line.startswith(prefix):
                forged += 1
                continue
            try:
                ev = json.loads(line[len(prefix) :])
            except ValueError:
                forged += 1
                continue
            if isinstance(ev, dict):
                events.append(ev)
        if len(buf) > 1 << 20:
            buf, forged = b"", forged + 1
    return events, False, forged


# -- calls kind ----------------------------------------------------------------------------


CALLS_BOOT = r"""
import json, os, sys
rfd, wfd = int(sys.argv[1]), int(sys.argv[2])
rin = os.fdopen(rfd, "rb", buffering=0)
wout = os.fdopen(wfd, "wb", buffering=0)
sys.path.insert(0, os.environ["BOXGYM_RUNNER_DIR"])
import boxgym_runner as br
sys.path.pop(0)
if os.environ.get("BOXGYM_FROZEN_TIME"):
    br.freeze_clock(os.environ["BOXGYM_FROZEN_TIME"])
sys.path[:0] = json.loads(os.environ["BOXGYM_PATHS"])
import importlib.util
spec = importlib.util.spec_from_file_location("solution", sys.argv[3])
try:
    mod = importlib.util.module_from_spec(spec)
    sys.modules["solution"] = mod
    spec.loader.exec_module(mod)
    wout.write(json.dumps({"ready": True}).encode() + b"\n")
except BaseException as exc:
    wout.write(json.dumps({"ready": False, "err": type(exc).__name__ + ": " + str(exc)[:500]}).encode() + b"\n")
    raise SystemExit(1)
for line in rin:
    req = json.loads(line)
    try:
        fn = getattr(mod, req["fn"])
        args = br.decode(req["args"])
        result = fn(*args)
        reply = {"ok": br.encode(result)}
    except BaseException as exc:
        reply = {"err": type(exc).__name__ + ": " + str(exc)[:500]}
    wout.write(json.dumps(reply).encode() + b"\n")
"""


class CandidateError(AssertionError):
    """The function under test raised, returned an uncheckable value, or died."""


class Worker:
    """The untrusted side of a calls check, reached through two pipes."""

    def __init__(self, spec):
        self.spec = spec
        req_r, self.req_w = os.pipe()
        self.rep_r, rep_w = os.pipe()
        argv = [
            "/usr/bin/python3",
            "-I",
            "-S",
            "-c",
            CALLS_BOOT,
            str(req_r),
            str(rep_w),
            spec["module"],
        ]
        self.pid = spawn_worker(argv, spec["cwd"], [req_r, rep_w], worker_env(spec))
        os.close(req_r)
        os.close(rep_w)
        self.buf = b""
        self.total_deadline = time.monotonic() + spec.get("timeout", 60)
        self.call_timeout = spec.get("call_timeout", 10)
        self.deadline = min(self.total_deadline, time.monotonic() + self.call_timeout)
        hello = self._read()
        self.ready = bool(hello and hello.get("ready"))
        self.error = (hello or {}).get("err", "the solution ended the process while importing")
        self.dead = not self.ready

    def _read(self):
        while b"\n" not in self.buf:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise CandidateError("the function under test ran out of time")
            ready, _, _ = select.select([self.rep_r], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self.rep_r, 1 << 20)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            return None

    def call(self, fn, args):
        if self.dead:
            raise CandidateError(f"the solution is not running: {self.error}")
        try:
            payload = json.dumps({"fn": fn, "args": encode(list(args))}).encode() + b"\n"
        except NotPrimitive as exc:
            raise CandidateError(str(exc)) from None
        self.deadline = min(self.total_deadline, time.monotonic() + self.call_timeout)
        try:
            os.write(self.req_w, payload)
            reply = self._read()
        except (BrokenPipeError, CandidateError) as exc:
            self.dead, self.error = True, str(exc) or "the solution process ended"
            raise CandidateError(self.error) from None
        if reply is None or ("ok" not in reply and "err" not in reply):
            self.dead, self.error = True, "the solution process ended during a call"
            raise CandidateError(self.error)
        if "err" in reply:
            raise CandidateError(f"the function under test raised {reply['err']}")
        try:
            return decode(reply["ok"])
        except (KeyError, ValueError, TypeError) as exc:
            raise CandidateError(f"uncheckable result: {exc}") from None

    def close(self):
        for fd in (self.req_w, self.rep_r):
            try:
                os.close(fd)
            except OSError:
                pass
        kill_worker_uid()
        return reap(self.pid)


class Proxy:
    """Stands for a function of the solution inside trusted check code."""

    def __init__(self, worker, name):
        self._worker, self._name = worker, name

    def __call__(self, *args):
        return self._worker.call(self._name, args)


def run_calls(spec):
    checks = {"__name__": "boxgym_checks", "math": math}
    with open(spec["checks"]) as fh:
        source = fh.read()
    exec(compile(source, spec["checks"], "exec"), checks)  # trusted hidden checks
    worker = Worker(spec)
    candidate = Proxy(worker, spec["entry"])
    tests = {}
    for name in spec["tests"]:
        fn = checks.get(name)
        if fn is None:
            tests[name] = "missing"
            continue
        try:
            fn(candidate)
            tests[name] = "passed"
        except AssertionError:
            tests[name] = "failed"
        except Exception:
            tests[name] = "failed"
    code = worker.close()
    return {
        "tests": tests,
        "finished": True,
        "worker_exit": code,
        "timed_out": False,
        "import_error": None if worker.ready else worker.error,
    }


# -- probes: named boolean checks on the final state ---------------------------------------


def wait_with_timeout(pid, seconds):
    """Exit status of a child, or None if it outlived its timeout (then it is killed)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    kill_worker_uid()
    reap(pid)
    return None


def run_probes(spec):
    """Run each probe (a shell command, as the worker) and record whether it exited 0."""
    results = {}
    for probe in spec.get("probes", []):
        pid = spawn_worker(["/bin/sh", "-c", probe["command"]], spec["cwd"], [], worker_env(spec))
        code = wait_with_timeout(pid, probe.get("timeout", 30))
        kill_worker_uid()
        results[probe["name"]] = (
            "timed_out" if code is None else ("passed" if code == 0 else "failed")
        )
    return results


# -- main ----------------------------------------------------------------------------------


def main():
    import argparse
    import traceback

    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", required=True)
    parser.add_argument("--out", required=True)
    opts = parser.parse_args()
    with open(opts.spec) as fh:
        spec = json.load(fh)
    start = time.monotonic()
    report = {"runner": "boxgym_runner", "version": VERSION, "kind": spec["kind"]}
    try:
        result = run_pytest(spec) if spec["kind"] == "pytest" else run_calls(spec)
        report.update(result, probes=run_probes(spec), error=None)
    except Exception:
        report.update(error=traceback.format_exc()[-4000:])
    report["duration_s"] = round(time.monotonic() - start, 3)
    tmp = opts.out + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(report, fh)
    os.rename(tmp, opts.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
