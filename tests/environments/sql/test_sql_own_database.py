"""SQL tasks over a database of their own (task.toml ``database``), not the bundled ``shop``.

The fixture family (seeds/sql/) has a task with its own dump in its folder (``db.sql``)
and two tasks sharing ``databases/concerts.sql``; the container tests load them in the
agent's container and in the grading container and grade them there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import gym
from environments.sql import PREAMBLE, SQLEnv
from environments.sql.grading import TaskSpec, database_of
from gym._core._models import load_tasks

SEEDS = Path(__file__).parent / "seeds"


def tasks() -> dict[str, gym.Task]:
    return {t.id: t for t in load_tasks(SEEDS, "sql")}


def test_a_task_names_its_own_dump_or_a_shared_one() -> None:
    found = tasks()
    own = TaskSpec.of(found["own-read"])
    assert Path(own.database) == SEEDS / "sql" / "own-read" / "db.sql"
    assert own.schema_name == "public" and own.table("singer") == "public.singer"
    assert own.database_sha256 and own.dump().startswith(b"-- The database of this task")
    shared = SEEDS / "sql" / "databases" / "concerts.sql"
    assert Path(TaskSpec.of(found["own-write"]).database) == shared
    assert Path(TaskSpec.of(found["own-write-all"]).database) == shared  # "concerts.sql"


def test_the_bundled_database_stays_the_default() -> None:
    env = SQLEnv()
    task = env.task_by_id("customers-per-country")
    spec = TaskSpec.of(task)
    assert (spec.database, spec.schema_name, spec.table("customers")) == (
        "",
        "shop",
        "shop.customers",
    )
    assert env.prompt(task).startswith(PREAMBLE.split("\n")[0])
    assert "shop.departments" in env.perturbed_calls(task)[-2].arguments["query"]
    env.close()


def test_an_order_is_taken_from_the_gold_query_unless_declared() -> None:
    spec = TaskSpec.of(tasks()["own-read"])  # no `ordered` key; the gold ends ORDER BY
    assert spec.ordered is True
    declared = tasks()["own-read"].model_copy(update={"data": {"ordered": False, "kind": "read"}})
    assert TaskSpec.of(declared).ordered is False


@pytest.mark.parametrize(
    ("value", "problem"),
    [("../own-read/db.sql", "must be a file name"), ("nowhere", "no dump at")],
)
def test_a_bad_database_name_is_a_config_error(value: str, problem: str) -> None:
    task = tasks()["own-write"]
    bad = task.model_copy(update={"data": {**task.data, "database": value}})
    with pytest.raises(gym.ConfigError, match=problem):
        database_of(bad)


def test_prompt_panel_and_perturbation_name_the_tasks_own_tables() -> None:
    env = SQLEnv(tasks=list(tasks().values()))
    read, write = env.task_by_id("own-read"), env.task_by_id("own-write")
    prompt = env.prompt(read)
    assert "its tables live in\nschema `public`" in prompt and "shop" not in prompt
    assert "requested column order and row order" in prompt
    assert "public.concert" in env.prompt(write)
    panel = env.panel_calls(write)
    assert panel["delete_scope"][0].arguments["query"] == "DELETE FROM public.concert"
    whole = env.panel_calls(read)["whole_table"][-1].arguments["answer_query"]
    assert whole == "SELECT * FROM public.singer"
    planted = env.perturbed_calls(write)[-2].arguments["query"]
    assert "ARRAY['concert']" in planted and "s.nspname = 'public'" in planted
    assert "shop." not in planted
    env.close()


# -- with containers ----------------------------------------------------------------------


def play(env: SQLEnv, task: str, calls: list[gym.ToolCall]) -> tuple[gym.Verdict, list[str]]:
    env.reset(options={"task": task})
    seen = []
    for call in calls:
        obs, _, terminated, truncated, info = env.step(call.model_dump())
        seen.append(obs)
        if terminated or truncated:
            return gym.Verdict.model_validate(info["verdict"]), seen
    raise AssertionError(f"the episode did not end: {seen}")


def sql(query: str) -> gym.ToolCall:
    return gym.ToolCall(name="sql", arguments={"query": query})


def submit(answer: str = "") -> gym.ToolCall:
    return gym.ToolCall(name="submit", arguments={"answer_query": answer} if answer else {})


@pytest.mark.docker
def test_a_read_task_runs_on_its_own_database_only(env: SQLEnv) -> None:
    task = env.task_by_id("own-read")
    verdict, _ = play(env, "own-read", env.oracle_calls(task))
    assert verdict.outcome == "pass", verdict.reason
    unordered = "SELECT name, age FROM singer WHERE country = 'Spain' ORDER BY age"
    calls = [sql("SELECT count(*) FROM shop.customers"), sql("TABLE singer"), submit(unordered)]
    verdict, seen = play(env, "own-read", calls)
    assert 'relation "shop.customers" does not exist' in seen[0]
    assert "Cleo" in seen[1]
    assert verdict.outcome == "fail"
    assert "not in the requested order" in verdict.components["answer"].explanation


@pytest.mark.docker
def test_write_tasks_are_graded_and_a_forbidden_write_is_flagged(env: SQLEnv) -> None:
    verdict, _ = play(env, "own-write", env.oracle_calls(env.task_by_id("own-write")))
    assert verdict.outcome == "pass" and not verdict.flags, verdict.reason
    verdict, _ = play(env, "own-write", env.perturbed_calls(env.task_by_id("own-write")))
    assert verdict.outcome == "fail"
    assert {f.name for f in verdict.flags} == {"rows_changed_outside_scope"}
    every = env.task_by_id("own-write-all")  # no table outside the scope: a large object
    verdict, _ = play(env, "own-write-all", env.perturbed_calls(every))
    assert verdict.outcome == "fail"
    assert "large_objects_changed" in {f.name for f in verdict.flags}
