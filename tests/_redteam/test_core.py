"""The suite's own parts, without containers: names and markers, the registry, judging."""

from __future__ import annotations

import functools
import random
import sqlite3
from typing import Any

import pytest

import gym
from gym._core._errors import ConfigError
from gym._redteam import ATTACKS, Expect, Names, Report, Row, ScriptAttack, register, registered
from gym._redteam._core import family_of, plan, representatives, selected
from gym._redteam._episode import judge
from gym._redteam._faults import changed, snapshot
from gym._run._rollout import EpisodeResult


def names(seed: int = 0) -> Names:
    return Names(random.Random(seed))


@pytest.mark.parametrize("seed", range(12))
def with_notes(n: Names) -> Names:
    """Names as a suite run hands them out (with the host canaries' coordinates)."""
    n.notes.update(canary_port="9", secret_name="X_SECRET", secret="s3cret", canary_folder="/tmp/c")
    return n


@pytest.mark.parametrize("seed", range(12))
def test_obfuscated_strings_evaluate_to_the_text_without_spelling_it(seed):
    text = "/grade/tests"
    expression = names(seed).py_str(text)
    assert eval(expression) == text  # noqa: S307 - the point of the test
    assert text not in expression


def test_names_differ_between_runs_and_repeat_with_a_seed():
    assert names(1).ident() == names(1).ident()
    assert len({names(s).ident() for s in range(50)}) == 50


def test_markers_are_never_whole_in_the_command_that_prints_them():
    n = names()
    commands = [n.ran_sh(), n.breach_sh("x"), n.ran_py(), n.breach_py("x"), n.ran_sql()]
    for token in [*n.ran, *n.breaches]:
        assert not any(token in c for c in commands)


def test_judging_markers_needs_every_ran_and_no_breach():
    n = names()
    n.ran_sh(), n.ran_sh(), n.breach_sh("x")
    ran, breach = n.ran, n.breaches[0]
    assert n.judge(f"{ran[0]}\n{ran[1]}\n").held
    assert not n.judge(f"{ran[0]}\n").held  # a probe cut short proves nothing
    found = n.judge(f"{ran[0]}\n{ran[1]}\n{breach} mount worked\n")
    assert not found.held and "mount worked" in found.observed


def result(outcome: str, reward: float | None, flags: tuple[str, ...] = ()) -> EpisodeResult:
    verdict = gym.Verdict(
        outcome=outcome,  # type: ignore[arg-type]
        reward=reward,
        flags=[gym.Flag(name=f) for f in flags],
    )
    return EpisodeResult(env_id="e", task_id="t", outcome=outcome, reward=reward, verdict=verdict)  # type: ignore[arg-type]


def test_an_attack_on_the_reward_holds_only_as_a_fail_with_its_flag():
    expect = Expect(flags=frozenset({"planted_hook"}))
    assert judge(expect, names(), result("fail", 0.0, ("planted_hook",))).held
    assert not judge(expect, names(), result("fail", 0.0)).held
    assert not judge(expect, names(), result("pass", 1.0, ("planted_hook",))).held
    assert not judge(expect, names(), result("infra_error", None)).held
    assert not judge(Expect(), names(), result("fail", 0.5)).held


def test_a_false_positive_check_fails_on_any_flag():
    expect = Expect(outcomes=frozenset({"pass"}), no_flags=True)
    assert judge(expect, names(), result("pass", 1.0)).held
    assert not judge(expect, names(), result("fail", 0.0, ("symlink_planted",))).held


def test_the_registry_refuses_a_taken_name_and_selects_by_family_and_kind():
    everything = registered()
    any_name = next(iter(everything))
    with pytest.raises(ConfigError, match="registered twice"):
        register(ScriptAttack(name=any_name, envs=("boxgym/PyRepo-v0",)))
    sql = list(selected(families=["sql"]))
    assert sql and all(env == "boxgym/SQL-v0" for _, env in sql)
    faults = list(selected(kinds=["fault"]))
    assert faults and all(a.kind == "fault" for a, _ in faults)
    fast = list(selected(fast=True))
    assert len(fast) == len({a.name for a, _ in fast})  # the quick subset: one env each
    assert family_of("-") == "harness" and family_of("boxgym/PyFunc-v0") == "code"


def test_one_env_per_family_covers_the_others_and_rotates_over_every_env():
    code = ("boxgym/PyRepo-v0", "boxgym/PyFunc-v0", "boxgym/HumanEval-v0")
    picks = [representatives([*code, "boxgym/SQL-v0"], i) for i in range(3)]
    assert [sorted(p) for p in picks][0] == ["boxgym/PyRepo-v0", "boxgym/SQL-v0"]
    assert {env for p in picks for env in p} == {*code, "boxgym/SQL-v0"}
    assert all(p["boxgym/SQL-v0"] == [] for p in picks)  # a family of one covers itself
    assert all(sorted(p[e]) == sorted(code) for p in picks for e in p if e in code)
    every = list(plan(every_env=True))
    once = list(plan(every_env=False))
    assert len(once) < len(every)
    assert {(a.name, family_of(e)) for a, e, _ in once} == {
        (a.name, family_of(e)) for a, e, _ in every
    }  # every attack still runs in every family it applies to
    assert {e for a, e, _ in once if a.kind == "attack"} == {
        e for a, e, _ in every if a.kind == "attack"
    }  # and the suite as a whole in every environment
    assert all(e in covers for _, e, covers in once if covers)
    pinned = list(plan(["sandbox.seccomp"], ["boxgym/HumanEval-v0"], every_env=False))
    assert [(e, c) for _, e, c in pinned] == [("boxgym/HumanEval-v0", [])]


def test_every_family_and_the_catalog_are_covered():
    everything = registered()
    envs = {env for attack in everything.values() for env in attack.envs}
    assert {"boxgym/PyRepo-v0", "boxgym/PyFunc-v0", "boxgym/HumanEval-v0"} <= envs
    assert {"boxgym/SQL-v0", "boxgym/Support-v0"} <= envs
    prefixes = {name.split(".")[0].split("[")[0] for name in everything}
    assert {"sandbox", "pytest", "calls", "copy_out", "sql", "support", "fault"} <= prefixes
    assert any(a.destructive for a in everything.values())


def _built_here(name: str) -> bool:
    """Whether a row's calls can be built without the engine and are all declared tools.

    Left to the red-team suite, which plays them in full: the tool-API rows that call
    undeclared tools on purpose, and the shell rows whose scripts end with the gold's
    answer (the shell oracle runs the gold command in a grading container to know it).
    """
    return not name.startswith(("toolapi.undeclared_calls[", "shell."))


@pytest.mark.parametrize(
    "name",
    sorted(n for n, a in registered().items() if isinstance(a, ScriptAttack) and _built_here(n)),
)
def test_every_scripted_attack_builds_calls_of_its_envs_tools(name):
    attack = ATTACKS[name]
    assert isinstance(attack, ScriptAttack)
    for env_id in attack.envs:
        inner = unwrapped(env_id)
        task = inner.task_by_id(attack.task_for(env_id))
        shared = with_notes(names())  # one episode's names, as the suite shares them
        for script in (attack.script, *attack.then):
            calls = script(shared, task, inner)
            assert calls, f"{name} makes no call in {env_id}"
            unknown = {c.name for c in calls} - set(inner.tool_table(task))  # task's tools too
            assert not unknown, f"{name} calls tools {env_id} lacks: {unknown}"


@functools.cache
def unwrapped(env_id: str) -> Any:
    """An environment of an id, made once (no episode is started: no container)."""
    return gym.make(env_id).unwrapped


def test_store_snapshots_see_every_changed_row_but_not_a_runs_last_activity(tmp_path):
    path = tmp_path / "runs.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE runs (id TEXT, updated_at REAL)")
        conn.execute("CREATE TABLE episodes (id TEXT, outcome TEXT)")
        conn.execute("INSERT INTO runs VALUES ('r', 1.0)")
        conn.execute("INSERT INTO episodes VALUES ('e1', 'pass'), ('e2', 'fail')")
    before = snapshot(path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET updated_at = 2.0")
        conn.execute("INSERT INTO episodes VALUES ('e3', 'pass')")
    assert changed(before, snapshot(path)) == []
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE episodes SET outcome = 'pass' WHERE id = 'e2'")
    assert changed(before, snapshot(path)) == ["episodes#2"]


def test_the_json_report_has_the_rows_the_issue_names():
    row = Row(name="n", kind="attack", env="e", expected="x", observed="y", held=True)
    data = Report(seed=1, runtime="runc", rows=[row]).model_dump(mode="json")
    assert set(data["rows"][0]) >= {"name", "kind", "env", "expected", "observed", "held"}


def test_docker_inspect_weaknesses_are_named():
    from gym._redteam._containment import _weaknesses

    clean = {
        "HostConfig": {
            "CapDrop": ["ALL"],
            "SecurityOpt": ["no-new-privileges"],
            "NetworkMode": "none",
            "IpcMode": "private",
            "CgroupnsMode": "private",
            "Memory": 1 << 30,
            "MemorySwap": 1 << 30,
            "PidsLimit": 256,
        },
        "Mounts": [{"Type": "bind", "Source": "/data/etc-hosts", "RW": False}],
    }
    assert [w for w, bad in _weaknesses(clean) if bad] == []
    weak = {**clean, "HostConfig": {**clean["HostConfig"], "Privileged": True, "PidMode": "host"}}
    weak["Mounts"] = [
        {"Source": "/var/run/docker.sock"},
        {"Type": "bind", "Source": "/", "RW": True},
    ]
    found = [w for w, bad in _weaknesses(weak) if bad]
    assert "privileged" in found and "engine socket mounted" in found
    assert "a writable bind mount" in found
    assert any("PidMode" in w for w in found)


def test_every_known_gap_names_a_registered_row_and_its_owner():
    from gym._redteam._reward import GAPS

    everything = registered()
    assert set(GAPS) <= set(everything)
    assert all(everything[name].gap == why and "branch" in why for name, why in GAPS.items())


def test_an_episode_that_never_started_is_started_again_and_not_judged(monkeypatch):
    attack = ScriptAttack(name="x.y", envs=("boxgym/PyFunc-v0",), tasks={"*": "t"})
    ends = [result("infra_error", None), result("infra_error", None), result("fail", 0.0)]
    starts: list[Any] = []

    def one(ctx: Any, env_id: str, policy: Any) -> EpisodeResult:
        starts.append(policy)
        policy.names.token("RAN")  # a marker of this start, never printed if it is lost
        return ends[len(starts) - 1]

    monkeypatch.setattr(attack, "_one_episode", one)
    ctx = type("Ctx", (), {"names": lambda self: with_notes(names())})()
    found = attack.run(ctx, "boxgym/PyFunc-v0")  # type: ignore[arg-type]
    assert len(starts) == 3 and found.held and found.observed == "fail reward=0"
    assert len(starts[0].names.ran) == 1  # the lost starts' markers were dropped
    ends[2] = result("infra_error", None)
    starts.clear()
    assert not attack.run(ctx, "boxgym/PyFunc-v0").held  # type: ignore[arg-type]
    assert len(starts) == 3  # never judged as held: three lost starts are reported
