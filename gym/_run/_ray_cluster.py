"""A Ray cluster of several nodes on this machine, each node its own ``ray start`` process.

For tests, benchmarks and trying the Ray executor without machines to spare: the head
and every worker node are separate process groups (``ray start --block``), as they are
on a real cluster, and share this machine's Docker engine. Every port is chosen free,
so two such clusters (or another user's Ray) can run side by side; authentication and
usage reporting are off, so nothing is written under the home folder. The cluster is
stopped by the process ids it started, never by ``ray stop`` (which stops every Ray
process of the machine).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from gym._core._errors import ConfigError, GymError

__all__ = ["LocalRayCluster"]

_STARTED = "Ray runtime started."
_CHECKOUT = Path(__file__).resolve().parents[2]
"""The folder that holds this ``gym`` package: workers import the same code."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ray_cli() -> str:
    beside = Path(sys.executable).with_name("ray")
    found = str(beside) if beside.exists() else shutil.which("ray")
    if not found:
        raise ConfigError("the `ray` command is missing: pip install 'boxgym[ray]'")
    return found


class LocalRayCluster:
    """A head node and worker nodes on this machine, started and stopped as a whole.

    Args:
        cpus: the CPUs each node offers, head first (``(1, 1)``: a head and one worker).
        env: extra environment variables for every node (and so every worker process).
        object_store_mb: each node's object store.
        timeout: seconds each node may take to start.

    Use it as a context manager; `address` is what `ray.init` and `RayExecutor` take.
    """

    def __init__(
        self,
        cpus: Sequence[float] = (1, 1),
        *,
        env: Mapping[str, str] | None = None,
        object_store_mb: int = 80,
        timeout: float = 180.0,
    ) -> None:
        if not cpus:
            raise ConfigError("a cluster needs at least a head node")
        self.cpus = list(cpus)
        self.extra_env = dict(env or {})
        self.object_store_mb = object_store_mb
        self.timeout = timeout
        self.address = ""
        self.nodes: list[subprocess.Popen[bytes]] = []
        """The ``ray start`` process of each node (head first), each its own group."""
        self.root = Path(tempfile.mkdtemp(prefix="bgray-"))  # short: Ray's socket paths

    def __enter__(self) -> LocalRayCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> str:
        """Start the head, then the workers; the head's address once all have started."""
        head_port = _free_port()
        self.address = f"127.0.0.1:{head_port}"
        head = [
            "--head",
            f"--port={head_port}",
            f"--temp-dir={self.root}",
            "--include-dashboard=false",
            f"--dashboard-port={_free_port()}",
        ]
        try:
            for index, cpus in enumerate(self.cpus):
                role = head if index == 0 else [f"--address={self.address}"]
                self._start_node(index, [*role, f"--num-cpus={cpus:g}"])
        except BaseException:
            self.stop()
            raise
        return self.address

    def kill_node(self, index: int) -> None:
        """``kill -9`` a node: its ``ray start``, raylet and worker processes at once."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.nodes[index].pid, signal.SIGKILL)
        self.nodes[index].wait()

    def stop(self) -> None:
        """Stop every node (workers first) and remove the cluster's files."""
        for proc in reversed(self.nodes):
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)  # `ray start --block` stops its node
        for proc in reversed(self.nodes):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # whatever of the node is left
            proc.wait()
        self.nodes.clear()
        shutil.rmtree(self.root, ignore_errors=True)

    def _environment(self) -> dict[str, str]:
        env = {**os.environ, **self.extra_env}
        env.update(
            RAY_AUTH_MODE="disabled",
            RAY_USAGE_STATS_ENABLED="0",
            RAY_enable_metrics_collection="0",  # no metrics agent to feed on a test machine
        )
        paths = [str(_CHECKOUT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        return env

    def _start_node(self, index: int, args: list[str], attempts: int = 2) -> None:
        """Start one node, again once if it fails (Ray gives a raylet 30 s to register)."""
        for attempt in range(1, attempts + 1):
            proc, log = self._spawn(index, args)
            try:
                self._wait_started(proc, log)
            except GymError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                if attempt == attempts:
                    raise
                continue
            self.nodes.append(proc)
            return

    def _spawn(self, index: int, args: list[str]) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.root / f"node{index}.log"
        ports = [
            f"--{name}={_free_port()}"
            for name in (
                "dashboard-agent-listen-port",
                "dashboard-agent-grpc-port",
                "runtime-env-agent-port",
                "metrics-export-port",
            )
        ]
        argv = [_ray_cli(), "start", "--block", "--disable-usage-stats", *args, *ports]
        argv.append(f"--object-store-memory={self.object_store_mb * 1024 * 1024}")
        with log.open("wb") as out:
            proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self._environment(),
                start_new_session=True,
                cwd=self.root,
            )
        return proc, log

    def _wait_started(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        deadline = time.monotonic() + self.timeout
        while _STARTED not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:]
                raise GymError(f"a Ray node did not start (log {log}):\n{tail}")
            time.sleep(0.2)
