"""The Ray executor on a real Ray cluster: a head and a worker node, separate processes.

Episodes run on real containers through the Ray workers; the driver (this process)
commits them. The cluster is started once for the module (two `ray start --block`
process groups, one CPU each) and stopped by its process ids at the end; the last test
kills the worker node, so it stays last in the file.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from gym._core._errors import ConfigError
from gym._run._executor import LocalExecutor
from gym._run._runner import RunConfig, plan, run
from gym._sandbox import list_boxgym
from gym._store import Store

ENV = "boxgym/PyFunc-v0"
GYM = os.path.join(os.path.dirname(sys.executable), "gym")
HAVE_RAY = importlib.util.find_spec("ray") is not None


def on_cluster(test):
    """Marks of a test on the module's Ray cluster and the real engine."""
    skip = pytest.mark.skipif(
        not HAVE_RAY, reason="the ray extra is not installed: pip install -e '.[ray]'"
    )
    for mark in (skip, pytest.mark.ray, pytest.mark.docker, pytest.mark.slow):
        test = mark(test)
    return test


def test_without_ray_the_executor_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    from gym._run._ray import RayExecutor

    with pytest.raises(ConfigError, match=r"pip install 'boxgym\[ray\]'"):
        RayExecutor()


def test_a_cluster_address_nothing_answers_at_is_refused_at_once():
    """`ray.init` tried 127.0.0.1:1 for minutes, the run stored, a stop unheard (helper H)."""
    import socket

    from gym._run._ray import _check_reachable

    with pytest.raises(ConfigError, match="no Ray cluster answers at 127.0.0.1:1"):
        _check_reachable("127.0.0.1:1")
    with socket.create_server(("127.0.0.1", 0)) as server:
        _check_reachable(f"127.0.0.1:{server.getsockname()[1]}")  # something answers
    for left_to_ray in ("", "auto", "local"):
        _check_reachable(left_to_ray)


def test_a_worker_refuses_a_task_whose_folder_is_not_on_its_node(tmp_path):
    from gym._run._executor import EpisodeWork, NamedPolicy
    from gym._run._ray import EpisodeWorker

    config = RunConfig(envs=[ENV], policy="noop", limit=1)
    (job,) = plan(config)
    moved = job.model_copy(
        update={"task": job.task.model_copy(update={"path": str(tmp_path / "x")})}
    )
    work = EpisodeWork(config.run_id, NamedPolicy("noop"))
    with pytest.raises(ConfigError, match="same path on every node"):
        EpisodeWorker().run(work, moved)


@pytest.mark.docker
def test_a_node_reaps_an_ended_worker_only_when_its_containers_are_gone(episode_process):
    # What `RayExecutor.close` asks of every node: a worker killed a moment ago may still
    # be alive, and its containers leave with it a little later; none may be left.
    from gym._run._ray import reap_node

    proc = episode_process()
    (owner,) = {
        c.labels["boxgym.owner"]
        for c in list_boxgym()
        if c.labels["boxgym.owner"].split(":")[1] == str(proc.pid)
    }
    proc.kill()  # as `ray.kill` does, and reaped by its parent as the raylet does
    threading.Thread(target=proc.wait, daemon=True).start()
    reap_node([owner], settle_s=30)
    assert not left_behind({owner})


@pytest.fixture(scope="module")
def cluster(engine):
    import ray

    from gym._run._ray_cluster import LocalRayCluster

    # A dead node is noticed after about five missed one-second health checks (default 15 s).
    fast = {"RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "5"}
    with LocalRayCluster((1, 1), env=fast) as c:
        ray.init(address=c.address, log_to_driver=False)
        try:
            yield c
        finally:
            ray.shutdown()


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    yield s
    s.close()


def head_node() -> str:
    import ray

    (head,) = [n["NodeID"] for n in ray.nodes() if "node:__internal_head__" in n["Resources"]]
    return head


def left_behind(owners: set[str]) -> list[str]:
    return [c.id for c in list_boxgym() if c.labels.get("boxgym.owner") in owners]


def summary(store: Store, run_id: str) -> dict[str, tuple]:
    verdicts = store.verdicts(run_id)
    return {
        e.id: (
            e.task_id,
            e.outcome,
            e.reward,
            [c.name for c in store.calls(e.id)],
            sorted((k, v["passed"]) for k, v in verdicts[e.id].components.items()),
        )
        for e in store.episodes(run_id)
    }


@on_cluster
@pytest.mark.parametrize("policy", ["oracle", "noop"])
def test_ray_runs_the_same_episodes_as_local_threads(cluster, tmp_path, policy):
    from gym._run._ray import RayExecutor

    config = RunConfig(envs=[ENV], policy=policy, limit=2)
    local, remote = Store(f"sqlite:///{tmp_path}/l.db"), Store(f"sqlite:///{tmp_path}/r.db")
    run(config, store=local, executor=LocalExecutor(2))
    with RayExecutor(workers=2) as executor:
        state = run(config, store=remote, executor=executor)
        assert {w.node_id for w in executor.workers} == {n["NodeID"] for n in _nodes()}
        owners = {w.owner for w in executor.workers}
    assert state.done == 2 and state.infra_error == 0
    assert summary(remote, config.run_id) == summary(local, config.run_id)
    assert {e.outcome for e in remote.episodes(config.run_id)} == {
        "pass" if policy == "oracle" else "fail"
    }
    assert not left_behind(owners)


def _nodes() -> list[dict]:
    import ray

    return [n for n in ray.nodes() if n["Alive"]]


@on_cluster
def test_a_worker_killed_mid_episode_loses_and_duplicates_nothing(cluster, store):
    from gym._run._ray import RayExecutor

    config = RunConfig(envs=[ENV], policy="oracle", limit=4)
    killed: list[str] = []

    with RayExecutor(workers=2) as executor:

        def kill_the_other_node_s_worker(state):
            if killed:
                return
            (victim,) = [w for w in executor.workers if w.node_id != head_node()]
            os.kill(victim.pid, signal.SIGKILL)  # busy: a job was still queued at the first commit
            killed.append(victim.owner)

        state = run(config, store=store, executor=executor, progress=kill_the_other_node_s_worker)
        assert executor.lost >= 1, "the worker was running an episode when it was killed"
        assert not left_behind(set(killed)), "the dead worker's containers were reaped"
        owners = {w.owner for w in executor.workers}
    ids = [e.id for e in store.episodes(config.run_id)]
    assert sorted(ids) == sorted(j.episode_id for j in plan(config))
    assert len(ids) == len(set(ids)) == 4
    assert state.done == state.passed == 4
    assert not left_behind(owners)


@on_cluster
def test_a_stopped_ray_run_is_finished_by_the_next_without_duplicates(cluster, store):
    from gym._run._ray import RayExecutor

    config = RunConfig(envs=[ENV], policy="noop", limit=4)

    class Stop(Exception):
        pass

    def stop_after_two(state):
        if state.done == 2:
            raise Stop

    with RayExecutor(workers=2) as executor:
        with pytest.raises(Stop):
            run(config, store=store, executor=executor, progress=stop_after_two)
        before = {e.id for e in store.episodes(config.run_id)}
        assert len(before) == 2
        # Both workers were busy (a job was queued at each commit): both ended, containers reaped.
        assert not left_behind({w.owner for w in executor.workers})
        state = run(config, store=store, executor=executor)
        owners = {w.owner for w in executor.workers}
    after = [e.id for e in store.episodes(config.run_id)]
    assert (state.done, state.skipped) == (2, 2)
    assert len(after) == len(set(after)) == 4 and before <= set(after)
    assert not left_behind(owners)


@on_cluster
def test_gym_run_executor_ray_on_a_cluster_address(cluster, tmp_path):
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    cmd = [GYM, "run", ENV, "--policy", "oracle", "--limit", "2", "--db", db, "--json"]
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    done = subprocess.run(
        [*cmd, "--executor", "ray", "--address", cluster.address, "-c", "2"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["envs"][ENV]["pass"] == 2


@on_cluster
def test_a_node_killed_mid_episode_loses_and_duplicates_nothing(cluster, store):
    """Last in the module: the worker node stays dead."""
    from gym._run._ray import RayExecutor

    config = RunConfig(envs=[ENV], policy="oracle", limit=4)
    killed: list[str] = []

    with RayExecutor(workers=2) as executor:

        def kill_the_worker_node(state):
            if not killed:
                (victim,) = [w for w in executor.workers if w.node_id != head_node()]
                cluster.kill_node(1)  # its raylet, its workers: every process of the node
                killed.append(victim.owner)

        state = run(config, store=store, executor=executor, progress=kill_the_worker_node)
        assert executor.lost >= 1, "the node's worker was running an episode when it died"
        assert len(_nodes()) == 1
        owners = {w.owner for w in executor.workers}
    ids = [e.id for e in store.episodes(config.run_id)]
    assert sorted(ids) == sorted(j.episode_id for j in plan(config))
    assert state.done == state.passed == len(set(ids)) == 4
    assert killed[0] in owners and not left_behind(owners)
