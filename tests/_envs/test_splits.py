"""Split roles: any split name, declared training or held-out; hygiene follows the role."""

from __future__ import annotations

import pytest

import gym
import gym.errors
import gym.train
from gym._core._models import natural_key
from gym._run._runner import RunConfig, plan, select_tasks


def test_the_default_roles_keep_train_and_eval_as_they_were() -> None:
    assert gym.train.split_use("boxgym/PyFunc-v0", "train") == "training"
    assert gym.train.split_use("boxgym/PyFunc-v0", "eval") == "held-out"
    assert gym.train.split_use("boxgym/PyFunc-v0", "validation") == "held-out"  # undeclared


def test_an_unregistered_environment_is_held_out_unless_the_split_is_train() -> None:
    assert gym.train.split_use("gone/Plugin-v0", "train") == "training"
    assert gym.train.split_use("gone/Plugin-v0", "test") == "held-out"


def test_training_code_is_refused_held_out_tasks_by_name() -> None:
    tasks = gym.train.training_tasks("boxgym/PyFunc-v0")
    assert tasks and {t.split for t in tasks} == {"train"}
    gym.train.refuse_held_out("boxgym/PyFunc-v0", tasks)  # no error
    held = [t for t in gym.make("boxgym/PyFunc-v0").unwrapped.tasks if t.split == "eval"]
    with pytest.raises(gym.errors.HeldOutError, match=rf"{held[0].id} \(eval\)"):
        gym.train.refuse_held_out("boxgym/PyFunc-v0", [*tasks, held[0]])
    with pytest.raises(gym.errors.HeldOutError, match="train: training, eval: held-out"):
        gym.train.refuse_held_out("boxgym/PyFunc-v0", ["eval"])


def test_natural_order_puts_2_before_10_and_keeps_plain_ids_in_string_order() -> None:
    ids = ["MBPP/10", "MBPP/2", "MBPP/100", "MBPP/1", "MBPP/11"]
    assert sorted(ids, key=natural_key) == ["MBPP/1", "MBPP/2", "MBPP/10", "MBPP/11", "MBPP/100"]
    words = ["lcs-length", "is-prime", "Zeta", "a1b", "a01b"]
    assert sorted(words, key=natural_key) == [
        "Zeta",
        "a01b",
        "a1b",
        "is-prime",
        "lcs-length",
    ]


def test_limit_takes_the_first_tasks_in_natural_order() -> None:
    tasks = [gym.Task(id=f"T/{n}", family="t", prompt="p") for n in (10, 2, 100, 1, 11)]
    assert [t.id for t in select_tasks(tasks, limit=3)] == ["T/1", "T/2", "T/10"]


def test_a_run_plans_mbpp_in_natural_order_within_the_split() -> None:
    config = RunConfig(envs=["boxgym/MBPP-v0"], policy="noop", split="validation", limit=20)
    assert [j.task.id for j in plan(config)] == [f"MBPP/{n}" for n in range(511, 531)]
    with pytest.raises(gym.ConfigError, match=r"declares the split 'tset'.*prompt, test"):
        plan(RunConfig(envs=["boxgym/MBPP-v0"], policy="noop", split="tset"))


def test_export_refuses_held_out_splits_by_role_and_filters_by_split(tmp_path) -> None:
    import json
    import time

    from gym._reports._records import write_records
    from gym._store import EpisodeRow, RunRow, Store

    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    store.ensure_run(RunRow(id="r1", created_at=time.time(), updated_at=time.time(),
                            config={}, policy="oracle", boxgym_version="0"))  # fmt: skip
    for n, split in [(601, "train"), (1, "prompt"), (511, "validation")]:
        store.commit_episode(
            EpisodeRow(
                id=f"e{n}",
                run_id="r1",
                env_id="boxgym/MBPP-v0",
                env_version=0,
                task_id=f"MBPP/{n}",
                split=split,
                sample_index=0,
                seed=0,
                policy="oracle",
                outcome="pass",
                reward=1.0,
            ),  # fmt: skip
            [],
            None,
        )
    with pytest.raises(
        gym.errors.StoreError, match=r"held-out splits \(boxgym/MBPP-v0 validation\)"
    ):
        write_records(store, "r1", tmp_path / "all.jsonl")
    n = write_records(store, "r1", tmp_path / "train.jsonl", split="train")
    lines = (tmp_path / "train.jsonl").read_text().splitlines()
    assert n == 1 and json.loads(lines[0])["task_id"] == "MBPP/601"
    assert write_records(store, "r1", tmp_path / "p.jsonl", split="prompt") == 1  # training
