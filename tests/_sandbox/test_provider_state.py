"""A provider owns its state; grading sandboxes get the grading settings; the retired free
functions warn and act on the default provider (gym/_sandbox/_provider.py, gym/sandbox.py).

No engine: pools sized 0 start nothing, and the sandboxes handed out here are local.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence

import pytest

import gym._sandbox._provider
import gym.sandbox
from gym._sandbox import graded
from gym.errors import UnsafeConfig
from gym.sandbox import (
    DockerSandboxes,
    ExecResult,
    LocalSandbox,
    LocalSandboxes,
    Sandbox,
    SandboxConfig,
    SandboxProvider,
    default_sandboxes,
)

CONFIG = SandboxConfig(image="boxgym/never-started:0")


@pytest.fixture
def two() -> Iterator[tuple[DockerSandboxes, DockerSandboxes]]:
    a, b = DockerSandboxes(pool_size=0), DockerSandboxes(pool_size=0)
    yield a, b
    a.close()
    b.close()


def test_two_providers_share_no_pool_gate_demand_or_counter(two):
    a, b = two
    assert a.pool_for(CONFIG) is a.pool_for(CONFIG), "one pool per config in a provider"
    assert a.pool_for(CONFIG) is not b.pool_for(CONFIG)
    assert a.pools.gate is not b.pools.gate and a.pools.controller is not b.pools.controller
    a.expect(episodes=7, gradings=2)
    assert (a.pools.demand.pending, a.pools.demand.queued) == (7, 2)
    assert b.pools.demand.pending is None, "the other provider heard nothing"
    a.pool_for(CONFIG).take()  # no spare (size 0): counted as started on demand
    assert a.counts() == {"agent.cold": 1} and b.counts() == {}


def test_resize_reaches_only_the_providers_own_pools(two):
    a, b = two
    pool_a, pool_b = a.pool_for(CONFIG), b.pool_for(CONFIG)
    a.resize(3)
    assert pool_a.size == 3 and pool_b.size == 0
    a.resize(0)


def test_close_lets_the_pools_go_and_later_use_starts_afresh(two):
    a, _ = two
    first = a.pool_for(CONFIG)
    a.close()
    assert first._stopped, "the closed pool refills nothing"
    assert a.pool_for(CONFIG) is not first


def test_the_latency_is_the_providers_own_gate():
    with DockerSandboxes(engine_slots=3) as provider:
        assert provider.latency() is None, "no engine operation yet"
        assert provider.pools.gate.slots == 3
        with provider.pools.gate.urgent():
            pass
        assert provider.latency() is not None


def test_a_provider_pickles_to_a_fresh_one_with_its_settings_one_per_process():
    with DockerSandboxes(lazy=False, pool_size=0, engine_slots=2) as provider:
        provider.expect(episodes=5)
        copy = pickle.loads(pickle.dumps(provider))
        again = pickle.loads(pickle.dumps(provider))
    assert copy is not provider and copy is again, "one rebuilt provider per process"
    assert (copy._lazy, copy.pools.size, copy.pools.gate.slots) == (False, 0, 2)
    assert copy.pools.demand.pending is None, "a fresh provider: nothing of the original's state"


def test_the_default_provider_is_one_per_process_and_the_environments_one():
    from gym._envs._env import default_sandboxes as envs_default

    assert default_sandboxes() is default_sandboxes() is envs_default()


# -- grading sandboxes ----------------------------------------------------------------------


def test_grading_settings_make_a_config_disposable_and_refuse_a_network():
    assert graded(CONFIG).disposable and graded(CONFIG).image == CONFIG.image
    assert graded(graded(CONFIG)) == graded(CONFIG)
    with pytest.raises(UnsafeConfig, match="no network but its own loopback"):
        graded(CONFIG.model_copy(update={"network": "boxgym-internal"}))


class Recorder(SandboxProvider):
    """Implements only what a provider must; records what it was asked for."""

    def __init__(self) -> None:
        self.asked: list[tuple[SandboxConfig, str, str]] = []

    def image(self, name: str) -> str:
        return name

    def acquire(self, config: SandboxConfig, *, run: str = "adhoc", role: str = "agent") -> Sandbox:
        self.asked.append((config, run, role))
        return LocalSandbox(config)

    def run_once(self, config: SandboxConfig, argv: Sequence[str], **kwargs: object) -> ExecResult:
        raise NotImplementedError


def test_a_grading_sandbox_is_acquired_as_a_grader_with_the_grading_settings():
    provider = Recorder()
    box = provider.grader(CONFIG)
    provider.release(box)
    ((config, run, role),) = provider.asked
    assert config == graded(CONFIG) and role == "grader" and run == "grading"
    assert box.closed


def test_a_provider_that_keeps_nothing_needs_none_of_the_runners_methods():
    provider = Recorder()
    provider.expect(episodes=3, gradings=1)
    provider.resize(4)
    assert provider.counts() == {} and provider.latency() is None
    with provider:
        pass


def test_the_docker_grader_pools_hold_only_grading_configs_of_grading_copies(two, monkeypatch):
    monkeypatch.setattr(gym._sandbox._provider, "grading_image", lambda ref: f"{ref}-copy")
    a, _ = two
    copy = graded(CONFIG).model_copy(update={"image": f"{CONFIG.image}-copy"})
    assert a.pool_for(CONFIG, "grader").config == copy
    assert a.pool_for(CONFIG, "grader") is a.pool_for(graded(CONFIG), "grader")


def test_a_local_one_shot_run_gets_the_grading_settings_too():
    local = LocalSandboxes(allow_unsafe=True)
    with pytest.raises(UnsafeConfig):
        local.run_once(CONFIG.model_copy(update={"network": "boxgym-internal"}), ["true"])
    assert local.run_once(CONFIG, ["sh", "-c", "echo ok"]).stdout == "ok\n"


# -- the retired free functions --------------------------------------------------------------


@pytest.fixture
def default_sized_0() -> Iterator[DockerSandboxes]:
    provider = default_sandboxes()
    size = provider.pools.size
    provider.resize(0)
    yield provider
    provider.pools.pool_for(CONFIG).close()
    provider.resize(size)


def test_a_retired_function_warns_when_called_and_names_what_to_use(default_sized_0):
    for name, args in {
        "set_pool_size": (0,),
        "container_counts": (),
        "expect_gradings": (0,),
    }.items():
        with pytest.warns(DeprecationWarning, match=rf"gym\.sandbox\.{name} is deprecated; use "):
            getattr(gym.sandbox, name)(*args)
    retired = "pool_for set_pool_size discard shutdown_pools container_counts expect_episodes"
    for name in [*retired.split(), "expect_gradings"]:
        assert name not in gym.sandbox.__all__ and callable(getattr(gym.sandbox, name))


def test_the_retired_functions_act_on_the_default_provider(default_sized_0):
    provider = default_sized_0
    with pytest.warns(DeprecationWarning):
        gym.sandbox.set_pool_size(2)
    assert provider.pools.size == 2
    provider.resize(0)
    with pytest.warns(DeprecationWarning):
        assert gym.sandbox.pool_for(CONFIG) is provider.pool_for(CONFIG)
    with pytest.warns(DeprecationWarning):
        gym.sandbox.expect_episodes(4)
    with pytest.warns(DeprecationWarning):
        gym.sandbox.expect_gradings(1)
    assert (provider.pools.demand.pending, provider.pools.demand.queued) == (4, 1)
    provider.expect(episodes=0, gradings=0)
    with pytest.warns(DeprecationWarning):
        assert gym.sandbox.container_counts() == provider.counts()
    box = LocalSandbox(CONFIG)
    with pytest.warns(DeprecationWarning):
        gym.sandbox.discard(box)
    assert box.closed or _closes_soon(box)
    # not called: it ends every provider's pools and refuses new containers (process exit)
    assert gym.sandbox.shutdown_pools.__wrapped__ is not None


def _closes_soon(box: LocalSandbox) -> bool:
    import time

    deadline = time.monotonic() + 5
    while not box.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    return box.closed
