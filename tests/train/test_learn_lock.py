"""LearnLock on real containers: N presses in order, only the whole combination rewarded."""

from __future__ import annotations

from collections import Counter

import pytest

import gym
from environments.learn import LearnLockEnv
from environments.learn._lock import combination

ENV = "boxgym/LearnLock-v0"


def _press(button: str) -> dict[str, object]:
    return {"name": "press", "arguments": {"button": button}}


@pytest.fixture
def lock(engine):
    env = gym.make(ENV, run="pytest-learnlock").unwrapped
    yield env
    env.close()


@pytest.mark.docker
def test_the_combination_opens_the_lock_at_the_third_press(lock):
    lock.reset(options={"task": "falcon"})
    assert list(lock.tools) == ["press"]  # no submit: the step budget ends the episode
    answers = [lock.step(_press(b)) for b in ("right", "left", "right")]
    assert [a[0] for a in answers] == [f"Press {n} of 3 recorded." for n in (1, 2, 3)]
    assert [(a[1], a[2], a[3]) for a in answers[:2]] == [(0.0, False, False)] * 2
    obs, reward, terminated, truncated, info = answers[2]
    assert (reward, terminated, truncated) == (1.0, False, True)
    assert info["verdict"]["outcome"] == "pass" and info["verdict"]["flags"] == []
    assert info["final_state"]["presses"] == ["right", "left", "right"]


@pytest.mark.docker
def test_a_fork_after_one_press_gives_branches_graded_on_their_own_presses(lock):
    lock.reset(options={"task": "maple"})  # right right left
    first = lock.step(_press("right"))[0]
    right, wrong = lock.fork(2, training=True)
    try:
        said = right.step(_press("right"))[0], wrong.step(_press("left"))[0]
        assert said == ("Press 2 of 3 recorded.",) * 2  # the same answer whatever the button
        assert first == "Press 1 of 3 recorded."
        assert right.step(_press("left"))[4]["verdict"]["outcome"] == "pass"
        info = wrong.step(_press("left"))[4]  # one press wrong: the lock stays shut
        assert info["verdict"]["outcome"] == "fail"
        assert info["final_state"]["presses"] == ["right", "left", "left"]
        assert right.lineage is not None and right.lineage.fork_step == 1
    finally:
        right.close()
        wrong.close()
    assert lock.step(_press("left"))[0] == "Press 2 of 3 recorded."  # the parent goes on


@pytest.mark.docker
def test_a_tool_not_offered_is_flagged_and_spends_a_press(lock):
    lock.reset(options={"task": "otter"})  # left right right
    lock.step({"name": "bash", "arguments": {"command": "cat /grade/expected.txt"}})
    lock.step(_press("left"))
    _, reward, _, truncated, info = lock.step(_press("right"))
    assert truncated and reward == 0.0
    assert [f["name"] for f in info["verdict"]["flags"]] == ["forbidden_tool"]


def test_the_keys_combinations_differ_and_split_evenly_at_every_press():
    env = LearnLockEnv()
    train = [t for t in env.tasks if t.split == "train"]
    held = [t for t in env.tasks if t.split == "eval"]
    assert (len(train), len(held)) == (8, 4)
    combos = {t.tags["key"]: tuple(combination(t, 3)) for t in train}
    assert len(set(combos.values())) == 8  # every combination of three presses, once
    for press in range(3):
        assert Counter(c[press] for c in combos.values()) == {"left": 4, "right": 4}
    for task in train + held:
        key = task.tags["key"]
        assert task.prompt.count(key) >= 40  # the key fills the context (see Learn-v0)
        assert " ".join(combination(task, 3)) not in task.prompt
    for task in held:  # the same key's combination, the prompt reworded
        twin = next(t for t in train if t.tags["key"] == task.tags["key"])
        assert combination(task, 4) == combination(twin, 4) and task.prompt != twin.prompt
    four = ("otter", "falcon", "maple", "cedar")  # the held-out keys, and the probes' four
    for press in range(3):
        assert Counter(combos[k][press] for k in four) == {"left": 2, "right": 2}


def test_a_combination_shorter_than_the_presses_is_refused():
    env = LearnLockEnv()
    with pytest.raises(gym.ConfigError, match="at least 5"):
        combination(env.task_by_id("otter"), 5)


def test_no_final_tool_is_allowed_only_where_the_step_budget_ends_the_episode():
    class Unbounded(LearnLockEnv):
        ends_by_budget = False

    with pytest.raises(gym.ConfigError, match="has no final tool"):
        Unbounded(max_steps=3).reset(options={"task": "falcon"})
    with pytest.raises(gym.ConfigError, match="has no final tool"):
        LearnLockEnv(max_steps=None).reset(options={"task": "falcon"})
    env = LearnLockEnv(max_steps=3)
    env.reset(options={"task": "falcon"})
    assert list(env.tools) == ["press"]
    env.close()
