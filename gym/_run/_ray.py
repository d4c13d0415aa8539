"""The Ray executor: a run's episodes on the workers of a Ray cluster.

A worker is a Ray actor: one process on one node, running one episode at a time. It
builds the environment and the policy itself from the run's `EpisodeWork` and runs the
containers on its node's own Docker engine (images are built there on first use, from
the same content-addressed tags). Results come back to the driver (the process that
called `gym._run._runner.run`), which alone commits them, so an episode is stored once.

A worker that dies (its process killed, its node lost) takes its episode with it: the
job goes back to the queue for another worker, and an episode lost ``max_losses`` times
is returned as infra_error (never as a reward). The containers of a dead worker are
removed by the reaper of its node: a new worker reaps its node when it first connects
to the engine. Whenever the executor itself ends workers (a run that lost one or was
stopped, and `close`), every live node a worker ran on waits for those processes to end
and for their containers to leave the engine, then reaps: none of theirs is left when
the run or `close` returns.

Ray is an optional extra (``pip install 'boxgym[ray]'``), imported only here.
"""

from __future__ import annotations

import collections
import logging
import os
import socket
import time
from collections.abc import Generator, Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gym._core._errors import ConfigError, GymError
from gym._policy import Policy
from gym._run._executor import EpisodeWork, Executor, Finished, Job
from gym._run._rollout import EpisodeResult
from gym._sandbox import (
    LABEL_OWNER,
    SandboxProvider,
    list_boxgym,
    owner_alive,
    owner_label,
    reap,
)

__all__ = ["EpisodeWorker", "RayExecutor", "WorkerInfo", "import_ray"]

log = logging.getLogger("gym.ray")

INSTALL_HINT = "pip install 'boxgym[ray]'"
SETTLE_S = 30.0
"""The longest a node waits for the workers the executor ended, and their containers, to go."""


def import_ray() -> Any:
    """The ``ray`` module.

    Raises:
        ConfigError: Ray is not installed; the message says how to install it.
    """
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(
            f"the Ray executor needs Ray, which is not installed: {INSTALL_HINT}"
        ) from exc
    return ray


class WorkerInfo(BaseModel):
    """One episode worker: a Ray actor process on a node."""

    node_id: str
    """The Ray node it runs on."""
    owner: str
    """The owner label of its containers (``host:pid:start-time``)."""

    @property
    def pid(self) -> int:
        """Its process id on its node."""
        return int(self.owner.rsplit(":", 2)[1])


class EpisodeWorker:
    """The body of a worker actor: one episode at a time, in its own process.

    Its policy is built on first use and kept while runs bring the same policy
    factory. Its sandbox provider is the work's, built in this process (the default
    one when the work names none); its warm pools keep one ready container per sandbox
    configuration.
    """

    def __init__(self) -> None:
        self._policy: Policy | None = None
        self._factory: Any = None
        self._providers: list[SandboxProvider] = []

    def info(self) -> WorkerInfo:
        """Where this worker runs (answered once it has started)."""
        node = import_ray().get_runtime_context().get_node_id()
        return WorkerInfo(node_id=node, owner=owner_label())

    def run(self, work: EpisodeWork, job: Job) -> Finished:
        """Run one job to its end.

        Raises:
            ConfigError: the task's folder (seeds, hidden checks) is not on this node.
        """
        if job.task.path and not Path(job.task.path).is_dir():
            raise ConfigError(
                f"task folder {job.task.path} is missing on Ray node {socket.gethostname()}: "
                "install boxgym (and its environments) at the same path on every node"
            )
        if self._policy is None or self._factory != work.policy_factory:
            self._close_policy()
            self._policy, self._factory = work.new_policy(), work.policy_factory
        self._follow(work.provider())
        return work(job, self._policy)

    def _follow(self, provider: SandboxProvider) -> None:
        """Keep one spare per configuration of a provider this worker has not used yet."""
        if all(provider is not p for p in self._providers):
            provider.resize(1)
            self._providers.append(provider)

    def close(self) -> None:
        """Close the policy and its providers: its warm pools' containers go."""
        self._close_policy()
        for provider in self._providers:
            provider.close()
        self._providers.clear()

    def _close_policy(self) -> None:
        if self._policy is not None:
            self._policy.close()
            self._policy = None


def reap_node(ended: Sequence[str] = (), settle_s: float = 0.0) -> list[str]:
    """Remove the containers of dead boxgym processes from this node's engine.

    Args:
        ended: owner labels of processes just ended (their containers leave with them,
            a little after); those of this host are waited for, up to ``settle_s``
            seconds, until neither they nor any container of theirs is left.
        settle_s: the longest wait.

    Returns:
        The ids of the containers this call removed.
    """
    deadline = time.monotonic() + settle_s
    here = {o for o in ended if owner_alive(o) is not None}
    while any(owner_alive(o) for o in here) and time.monotonic() < deadline:
        time.sleep(0.05)
    removed = reap()  # their owners are gone: every container of theirs is removed or leaving
    while time.monotonic() < deadline and any(
        c.labels.get(LABEL_OWNER) in here for c in list_boxgym()
    ):
        time.sleep(0.05)
    return removed


def _lost_result(job: Job, times: int, exc: BaseException) -> EpisodeResult:
    return EpisodeResult(
        env_id=job.env_id,
        task_id=job.task.id,
        split=job.task.split,
        seed=job.seed,
        outcome="infra_error",
        end_reason=f"infra: lost with its Ray worker {times} times (last: {type(exc).__name__})",
    )


class _Fleet:
    """The executor's worker actors: starting, idle or busy with one job."""

    def __init__(self, ray: Any, options: dict[str, Any]) -> None:
        self._ray = ray
        self._actor = ray.remote(EpisodeWorker).options(**options)
        self.starting: dict[Any, Any] = {}
        """The ``info`` call of each starting actor -> the actor."""
        self.idle: list[Any] = []
        self.busy: dict[Any, tuple[Any, Job]] = {}
        """The ``run`` call of each busy actor -> the actor and its job."""
        self.owners: dict[Any, str] = {}
        """Each started actor -> the owner label of its containers."""
        self.ended: list[str] = []
        """Owner labels of the actors this fleet killed."""

    @property
    def size(self) -> int:
        """Actors started and not lost."""
        return len(self.starting) + len(self.idle) + len(self.busy)

    def grow(self, size: int) -> None:
        """Start actors until there are ``size``."""
        while self.size < size:
            self.start()

    def start(self) -> None:
        """Start one actor (it becomes idle when its ``info`` answers)."""
        actor = self._actor.remote()
        self.starting[actor.info.remote()] = actor

    def dispatch(self, queue: collections.deque[Job], work: Any) -> None:
        """Give each idle actor the next job."""
        while self.idle and queue:
            actor, job = self.idle.pop(), queue.popleft()
            self.busy[actor.run.remote(work, job)] = (actor, job)

    def wait(self, timeout: float) -> list[Any]:
        """The calls that answered next (none after ``timeout`` seconds)."""
        ready, _ = self._ray.wait([*self.starting, *self.busy], num_returns=1, timeout=timeout)
        return list(ready)

    def kill(self, actor: Any) -> None:
        """End an actor at once (its process, with its links to its containers)."""
        self._ray.kill(actor, no_restart=True)
        if actor in self.owners:
            self.ended.append(self.owners.pop(actor))

    def abandon_busy(self) -> None:
        """Kill the actors still running jobs (the run stopped) and wait for their end."""
        calls = list(self.busy)
        for actor, _ in self.busy.values():
            self.kill(actor)
        self.busy.clear()
        if calls:
            self._ray.wait(calls, num_returns=len(calls), timeout=30)

    def close(self) -> None:
        """Close the idle actors (their containers go), then end every actor."""
        calls = [actor.close.remote() for actor in self.idle]
        if calls:
            self._ray.wait(calls, num_returns=len(calls), timeout=60)
        self.abandon_busy()
        for actor in [*self.idle, *self.starting.values()]:
            self.kill(actor)
        self.idle.clear()
        self.starting.clear()


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse a cluster address nothing answers at, before a run is stored.

    ``ray.init`` tried an unreachable ``HOST:PORT`` for minutes, the run already stored
    and a stop signal unheard. Only ``HOST:PORT`` (``ray://`` too) is checked: ``auto``
    and an empty address are Ray's to resolve.

    Raises:
        ConfigError: no connection to it within ``timeout`` seconds.
    """
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ConfigError(
            f"no Ray cluster answers at {address} ({exc.strerror or exc}): start one there "
            "(`ray start --head`) or give --address (RAY_ADDRESS) of one that runs"
        ) from None


class RayExecutor(Executor):
    """Episodes on the workers of a Ray cluster: one worker process per episode at once.

    Workers stay up between runs (warm pools, loaded policies) until `close`; use the
    executor as a context manager.

    Args:
        address: the cluster, as `ray.init` takes it: ``HOST:PORT``; ``auto`` (an
            existing cluster or an error); None (``RAY_ADDRESS``, else the cluster
            last started on this machine, else a new one on this machine alone).
            Unused when Ray is already initialized in this process.
        workers: episodes at once; by default the cluster's CPUs divided by
            ``cpus_per_worker``.
        cpus_per_worker: the Ray CPU resource each worker holds.
        max_losses: times an episode may be lost with its worker before it is
            returned as infra_error.
        start_timeout: seconds to wait for a first worker before giving up.

    Raises:
        ConfigError: Ray is not installed.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        workers: int | None = None,
        cpus_per_worker: float = 1.0,
        max_losses: int = 3,
        start_timeout: float = 300.0,
    ) -> None:
        self._ray = import_ray()
        self.address = address
        _check_reachable(address or os.environ.get("RAY_ADDRESS") or "")
        self.wanted = workers
        self.cpus_per_worker = cpus_per_worker
        self.max_losses = max(1, max_losses)
        self.start_timeout = start_timeout
        self.workers: list[WorkerInfo] = []
        """Every worker this executor started, alive or lost."""
        self.lost = 0
        """Episodes lost with their worker (and run again, or given up)."""
        self._fleet: _Fleet | None = None
        self._owns_ray = False
        self._failed_starts = 0

    def run(self, jobs: Iterable[Job], work: EpisodeWork) -> Generator[Finished, None, None]:
        """Run the jobs on the cluster's workers; yield each as it finishes."""
        queue = collections.deque(jobs)
        if not queue:
            return
        fleet = self._ensure_fleet()
        fleet.grow(min(self._size(), len(queue)))
        work_ref = self._ray.put(work)
        losses: collections.Counter[str] = collections.Counter()
        try:
            while queue or fleet.busy:
                fleet.dispatch(queue, work_ref)
                for call in self._wait(fleet):
                    finished = self._settle(fleet, call, queue, losses)
                    if finished is not None:
                        fleet.dispatch(queue, work_ref)
                        yield finished
        finally:
            fleet.abandon_busy()
            if fleet.ended:  # workers lost, or ended because the run stopped
                self.reap(ended=fleet.ended)
                fleet.ended.clear()

    def close(self) -> None:
        """End every worker and wait until their containers are gone; leave the cluster."""
        fleet, self._fleet = self._fleet, None
        if fleet is not None:
            fleet.close()
            self.reap(ended=fleet.ended)
        if self._owns_ray:
            self._ray.shutdown()
            self._owns_ray = False

    def reap(self, ended: Sequence[str] = ()) -> list[str]:
        """On every live node a worker ran on, remove containers of dead processes.

        Args:
            ended: owner labels of workers just ended: each node waits (up to
                ``SETTLE_S``) for those of its host to be gone, with their containers.

        Returns:
            The ids of the removed containers.
        """
        alive = {n["NodeID"] for n in self._ray.nodes() if n["Alive"]}
        nodes = sorted({w.node_id for w in self.workers} & alive)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy as OnNode

        task = self._ray.remote(reap_node)
        calls = [
            task.options(num_cpus=0, scheduling_strategy=OnNode(node, soft=False)).remote(
                list(ended), SETTLE_S if ended else 0.0
            )
            for node in nodes
        ]
        removed: list[str] = []
        for call in calls:
            try:
                removed += self._ray.get(call, timeout=120)
            except Exception as exc:  # a node that cannot reap now reaps when next used
                log.warning("could not reap a Ray node: %s", exc)
        return removed

    def _ensure_fleet(self) -> _Fleet:
        if self._fleet is None:
            if not self._ray.is_initialized():
                self._ray.init(
                    address=self.address, logging_level=logging.WARNING, log_to_driver=False
                )
                self._owns_ray = True
            options = {
                "num_cpus": self.cpus_per_worker,
                "max_restarts": 0,
                "max_task_retries": 0,
                "scheduling_strategy": "SPREAD",
            }
            self._fleet = _Fleet(self._ray, options)
        return self._fleet

    def _size(self) -> int:
        if self.wanted:
            return self.wanted
        cpus = float(self._ray.cluster_resources().get("CPU", 0))
        size = int(cpus // self.cpus_per_worker)
        if size < 1:
            raise ConfigError(
                f"the Ray cluster offers {cpus:g} CPUs, less than one worker's "
                f"{self.cpus_per_worker:g}: add nodes, or pass workers= (gym run -c N)"
            )
        return size

    def _wait(self, fleet: _Fleet) -> list[Any]:
        calls = fleet.wait(self.start_timeout)
        if not calls and not fleet.busy:
            raise GymError(
                f"no Ray worker started within {self.start_timeout:g} s: does the cluster "
                f"have {self.cpus_per_worker:g} free CPU per worker? (`ray status`)"
            )
        return calls

    def _settle(
        self,
        fleet: _Fleet,
        call: Any,
        queue: collections.deque[Job],
        losses: collections.Counter[str],
    ) -> Finished | None:
        """Take an answered call: a worker started, or a job finished or was lost."""
        if call in fleet.starting:
            self._started(fleet, call)
            return None
        actor, job = fleet.busy.pop(call)
        try:
            finished: Finished = self._ray.get(call)
        except self._lost_errors() as exc:
            return self._lost(fleet, actor, job, exc, queue, losses)
        fleet.idle.append(actor)
        return finished

    def _started(self, fleet: _Fleet, call: Any) -> None:
        actor = fleet.starting.pop(call)
        try:
            info: WorkerInfo = self._ray.get(call)
        except self._lost_errors() as exc:
            self._failed_starts += 1
            if not self.workers or self._failed_starts > 3 * fleet.size + 3:
                raise GymError(
                    f"a Ray worker could not start ({exc}); every node needs boxgym, its "
                    "environments and a Docker engine"
                ) from exc
            log.warning("a Ray worker could not start; starting another: %s", exc)
            fleet.start()
            return
        self.workers.append(info)
        fleet.owners[actor] = info.owner
        fleet.idle.append(actor)

    def _lost(
        self,
        fleet: _Fleet,
        actor: Any,
        job: Job,
        exc: BaseException,
        queue: collections.deque[Job],
        losses: collections.Counter[str],
    ) -> Finished | None:
        """A worker died with a job: run it again elsewhere, or give it up as infra_error."""
        fleet.kill(actor)
        fleet.start()
        self.lost += 1
        losses[job.episode_id] += 1
        times = losses[job.episode_id]
        log.warning("episode %s lost with its Ray worker (%d): %s", job.episode_id, times, exc)
        if times < self.max_losses:
            queue.appendleft(job)
            return None
        return Finished(job, _lost_result(job, times, exc), times)

    def _lost_errors(self) -> tuple[type[BaseException], ...]:
        errors = self._ray.exceptions
        return (errors.RayActorError, errors.WorkerCrashedError, errors.NodeDiedError)
