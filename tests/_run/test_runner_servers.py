"""A run whose model server is not there fails before anything is stored.

The run's named policy (and user) ask their servers for their models first
(`gym._run._runner.check_servers`): real HTTP servers on localhost (`models_server`),
the toy family's local sandboxes (no Docker).
"""

from __future__ import annotations

import time

import pytest
from models_server import ModelsServer, free_port
from toy_env import ENV_ID

from gym import ConfigError, OraclePolicy, PolicyError
from gym._run._runner import RunConfig, run
from gym._store import Store


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    yield s
    s.close()


def openai_run(url: str, model: str = "served", **more) -> RunConfig:
    params = {"model": model, "base_url": url, "max_retries": 5}
    return RunConfig(envs=[ENV_ID], policy="openai", policy_params=params, limit=1, **more)


def test_no_server_is_an_error_within_a_second_and_stores_no_run(store):
    url = f"http://127.0.0.1:{free_port()}/v1"
    start = time.monotonic()
    with pytest.raises(PolicyError, match=r"no model server answers at .*\(connection refused\)"):
        run(openai_run(url), store=store)
    assert time.monotonic() - start < 1
    assert store.runs() == [] and store.run_statuses() == {}


def test_a_model_the_server_does_not_serve_is_an_error_and_stores_no_run(store):
    with ModelsServer(["served"]).serving() as server:
        with pytest.raises(ConfigError, match=r"serves no model 'typo' \(it serves served\)"):
            run(openai_run(server.url, "typo"), store=store)
    assert server.posts == 0 and store.runs() == []


def test_a_server_that_serves_the_model_runs_and_stores_the_run(store):
    with ModelsServer(["served"]).serving() as server:
        config = openai_run(server.url)
        state = run(config, store=store)
    assert server.gets == ["/v1/models"] and server.posts == 1  # one episode: submit
    assert (state.done, state.failed, state.infra_error) == (1, 1, 0)
    assert store.run_status(config.run_id).label() == "finished 1/1"


def test_the_users_server_is_checked_too(store):
    url = f"http://127.0.0.1:{free_port()}/v1"
    with ModelsServer(["served"]).serving() as server:
        config = openai_run(server.url, user="openai", user_params={"model": "u", "base_url": url})
        with pytest.raises(PolicyError, match=r"start it, or pass --user-base-url$"):
            run(config, store=store)
    assert store.runs() == []


def test_a_policy_factory_of_the_callers_own_is_not_checked(store):
    """The factory may need no server: only a policy named by the config is checked."""
    config = openai_run(f"http://127.0.0.1:{free_port()}/v1")
    state = run(config, store=store, policy_factory=OraclePolicy)
    assert state.passed == 1


def test_a_finished_run_needs_no_server_to_be_run_again(store):
    with ModelsServer(["served"]).serving() as server:
        config = openai_run(server.url)
        run(config, store=store)
    state = run(config, store=store)  # the server is gone; nothing is left to run
    assert (state.skipped, state.done) == (1, 0)
