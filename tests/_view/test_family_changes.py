"""The viewer shows an episode's changes through its family's `changes` hook, any family.

A plugin family (tests/plugin_family/, registered as a user registers one) runs an
oracle episode through the runner into a store of its own; its episode page shows the
diff its hook returns. A family whose hook returns None is shown as its export.
"""

from __future__ import annotations

import html
import json

import plugin_family
import pytest

import gym.authoring
from gym import OraclePolicy
from gym._view import Site, _state
from gym._view._links import episode_page, raw_page
from gym._view._state import final_state
from gym.runs import RunConfig, Store, run


@pytest.fixture
def notes_episode(tmp_path):
    """(store, episode) of one oracle episode of the plugin family, stored by the runner."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with plugin_family.registered():
        config = RunConfig(envs=[plugin_family.ENV_ID], policy="oracle", k=1)
        state = run(config, store=Store(url), policy_factory=OraclePolicy, concurrency=1)
        assert state.passed == 1
        store = Store(url, read_only=True)
        (episode,) = store.episodes(config.run_id)
        yield store, episode
        store.close()


@pytest.fixture
def fresh_envs():
    """The viewer's environments made anew (it keeps one per id)."""
    _state._env.cache_clear()
    yield
    _state._env.cache_clear()


def test_the_episode_page_shows_the_plugin_familys_diff(notes_episode, fresh_envs):
    store, episode = notes_episode
    body = html.unescape(Site(store).page(episode_page(episode.id)).body.decode())
    assert "--- a/notes/hello" in body and "+++ b/notes/hello" in body and "+hi" in body
    assert "notes/todo" not in body  # unchanged: the hook leaves it out
    raw = Site(store).page(raw_page(episode.id, "diff")).body.decode()
    assert "+hi" in raw.splitlines()


def test_a_family_without_changes_is_shown_as_its_export(notes_episode, fresh_envs, monkeypatch):
    _, episode = notes_episode
    env_class = type(gym.authoring.env_of(gym.make(plugin_family.ENV_ID)))
    monkeypatch.setattr(env_class, "changes", lambda self, task, final_state: None)
    state = final_state(episode.env_id, episode.task_id, episode.export, "raw")
    assert state.kind == "export" and state.export is not None
    assert json.loads(state.export.text)["notes"]["hello"] == "hi\n"


def test_an_episode_of_an_unknown_task_is_shown_as_its_export(notes_episode, fresh_envs):
    _, episode = notes_episode
    assert final_state(episode.env_id, episode.task_id, episode.export, "raw").kind == "diff"
    state = final_state(episode.env_id, "no-such-task", episode.export, "raw")
    assert state.kind == "export"
