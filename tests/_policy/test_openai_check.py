"""`OpenAIPolicy.check`: the model server is asked for its models once, briefly.

Against real servers on localhost (`models_server`): one that lists the model, one that
lists others, one with no list, a port where nothing listens, one that never answers.
"""

from __future__ import annotations

import time

import pytest
from models_server import ModelsServer, free_port, silent

import gym._policy._openai as openai_module
from gym import ConfigError, PolicyError
from gym._policy import NamedUser, OpenAIPolicy


def test_a_server_that_serves_the_model_passes():
    with ModelsServer(["other", "served"]).serving() as server:
        policy = OpenAIPolicy("served", server.url)
        policy.check()
        policy.close()
    assert server.gets == ["/v1/models"]


def test_nothing_listening_fails_at_once_naming_the_url_and_what_to_do():
    url = f"http://127.0.0.1:{free_port()}/v1"
    policy = OpenAIPolicy("x", url, max_retries=5)
    start = time.monotonic()
    with pytest.raises(PolicyError) as caught:
        policy.check()
    assert time.monotonic() - start < 2  # no retries: the run's requests keep theirs
    assert str(caught.value) == (
        f"no model server answers at {url} (connection refused): start it, or pass --base-url"
    )


def test_a_server_that_serves_other_models_names_them():
    with ModelsServer(["Qwen/Qwen3-8B", "llama"]).serving() as server:
        with pytest.raises(ConfigError) as caught:
            OpenAIPolicy("qwen3", server.url).check()
    assert str(caught.value) == (
        f"the model server at {server.url} serves no model 'qwen3' "
        "(it serves Qwen/Qwen3-8B, llama): pass --model with one of them"
    )


def test_a_long_list_of_models_is_cut_short():
    with ModelsServer([f"m{i}" for i in range(9)]).serving() as server:
        with pytest.raises(ConfigError, match=r"\(it serves m0, m1, m2, m3, m4 and 4 more\)"):
            OpenAIPolicy("x", server.url).check()


@pytest.mark.parametrize("status", [404, 401, 500])
def test_a_server_without_a_list_of_models_passes(status):
    """No /models (or an error there): its chat requests will say what is wrong."""
    with ModelsServer([], status=status).serving() as server:
        OpenAIPolicy("x", server.url).check()
    assert server.gets == ["/v1/models"]


def test_a_server_that_never_answers_fails_after_the_read_bound(monkeypatch):
    monkeypatch.setattr(openai_module, "CHECK_READ_S", 0.3)
    with silent() as url:
        with pytest.raises(PolicyError, match=r"\(no answer to GET /models in 0.3 s\)"):
            OpenAIPolicy("x", url).check()


def test_the_users_server_is_checked_with_the_users_options():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(PolicyError, match=r"start it, or pass --user-base-url$"):
        NamedUser("openai", {"model": "x", "base_url": url}).check()
    with ModelsServer(["served"]).serving() as server:
        with pytest.raises(ConfigError, match=r"pass --user-model with one of them$"):
            NamedUser("openai", {"model": "x", "base_url": server.url}).check()
        NamedUser("openai", {"model": "served", "base_url": server.url}).check()
    NamedUser("scripted").check()  # nothing to reach


@pytest.mark.parametrize(
    ("served", "model"),
    [(["llama3:latest"], "llama3"), (["openai/*"], "openai/gpt-5"), (["a", "m"], "m")],
)
def test_a_model_the_server_answers_to_under_another_listing_passes(served, model):
    """Ollama lists a tag the request may leave out; a router lists a wildcard route."""
    from gym._policy._openai import _serves

    assert _serves(served, model) and not _serves(served, "other")
