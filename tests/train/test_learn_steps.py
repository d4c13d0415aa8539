"""LearnSteps on real containers: look, open the card's drawer, submit; the order matters."""

from __future__ import annotations

from collections import Counter

import pytest

import gym
from environments.learn import LearnStepsEnv, hidden_answer

ENV = "boxgym/LearnSteps-v0"


def _call(name: str, **arguments: str) -> dict[str, object]:
    return {"name": name, "arguments": arguments}


@pytest.fixture
def steps(engine):
    env = gym.make(ENV, run="pytest-learnsteps").unwrapped
    yield env
    env.close()


@pytest.mark.docker
def test_look_open_submit_passes_and_only_the_card_names_the_key(steps):
    _, info = steps.reset(options={"task": "drawers-05"})  # otter's card, in the right drawer
    assert "otter" not in steps.task.prompt
    assert "key" not in info["tags"] and "otter" not in str(info["tags"])
    assert info["task_id"] == "drawers-05"
    listing = steps.step(_call("look"))[0]
    assert listing.splitlines() == ["left: empty", "middle: empty", "right: a card"]
    assert "otter otter" in steps.step(_call("open", drawer="right"))[0]
    assert steps.step(_call("open", drawer="left"))[0] == ""
    _, reward, terminated, _, info = steps.step(_call("submit", choice="C"))
    assert terminated and reward == 1.0 and info["verdict"]["flags"] == []


@pytest.mark.docker
def test_a_drawer_opened_before_looking_is_closed_and_a_wrong_door_fails(steps):
    steps.reset(options={"task": "drawers-11"})  # falcon, middle
    assert steps.step(_call("open", drawer="middle"))[0] == "The drawers are closed: look first."
    _, reward, _, _, info = steps.step(_call("submit", choice="B"))
    assert reward == 0.0 and info["verdict"]["outcome"] == "fail"


@pytest.mark.docker
def test_a_fork_after_looking_gives_branches_with_their_own_verdicts(steps):
    steps.reset(options={"task": "drawers-07"})  # maple, middle
    steps.step(_call("look"))
    right, wrong = steps.fork(2, training=True)
    try:
        assert "maple maple" in right.step(_call("open", drawer="middle"))[0]
        assert right.step(_call("submit", choice="D"))[4]["verdict"]["outcome"] == "pass"
        assert wrong.step(_call("submit", choice="A"))[4]["verdict"]["outcome"] == "fail"
        assert right.lineage is not None and right.lineage.fork_step == 1
    finally:
        right.close()
        wrong.close()


def test_each_key_is_trained_in_two_drawers_and_held_out_in_a_third():
    env = LearnStepsEnv()
    by_split = Counter((t.data["key"], t.split) for t in env.tasks)
    keys = {"otter", "falcon", "maple", "cedar"}
    assert by_split == {**{(k, "train"): 2 for k in keys}, **{(k, "eval"): 1 for k in keys}}
    for key in keys:
        cards = {t.data["card"] for t in env.tasks if t.data["key"] == key}
        answers = {hidden_answer(t) for t in env.tasks if t.data["key"] == key}
        assert len(cards) == 3 and len(answers) == 1
    assert len({t.prompt for t in env.tasks if t.split == "train"}) == 1  # the key is not in it


def test_the_key_is_host_side_only_never_in_a_tasks_tags():
    """Reset's info, the store and reports carry a task's tags: the key is in its data."""
    tasks = LearnStepsEnv().tasks
    assert tasks and all("key" not in t.tags and t.data["key"] for t in tasks)
    assert all(t.data["key"] not in " ".join(t.tags.values()) for t in tasks)


def test_no_task_id_or_tag_names_its_key_or_its_cards_drawer():
    """Reset's info carries a task's id, split and tags: none may give the answer away."""
    tasks = LearnStepsEnv().tasks
    assert len(tasks) == 12
    for task in tasks:
        secrets = (task.data["key"], task.data["card"])
        shown = " ".join([task.id, task.split, *task.tags, *map(str, task.tags.values())])
        assert not [s for s in secrets if s in shown.lower()], (task.id, secrets)
