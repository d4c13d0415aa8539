"""The liar sweep: a generic non-solution graded against shipped code tasks must fail each.

scripts/redteam.sh runs the row over every task of every code environment; here, a few
tasks of each in real grading containers, and how the row reads its verdicts.
"""

from __future__ import annotations

import random

import pytest

from gym._core._models import Verdict
from gym._redteam._core import ATTACKS, Context
from gym._redteam._sweep import (
    CODE_ENVS,
    AnswerSweep,
    ChannelSweep,
    EmptiedSweep,
    ExhaustionSweep,
    HonestSweep,
    KernelHoardSweep,
    LiarSweep,
    MemorySweep,
    RoundedSweep,
    SignalSweep,
    _finding,
    liar_export,
)


def _context() -> Context:
    return Context(rng=random.Random(0), canaries=None, label="test")  # type: ignore[arg-type]


SWEEPS = [
    *((LiarSweep, env, 4) for env in CODE_ENVS),
    *((ChannelSweep, env, 2) for env in CODE_ENVS),
    *((AnswerSweep, env, 2) for env in CODE_ENVS),
    # the long rows' adversaries, on one task of each grading kind (calls, pytest)
    *((ExhaustionSweep, env, 1) for env in ("boxgym/PyFunc-v0", "boxgym/PyRepo-v0")),
    *((MemorySweep, env, 1) for env in ("boxgym/PyFunc-v0", "boxgym/PyRepo-v0")),
]


@pytest.mark.docker
@pytest.mark.parametrize(("sweep", "env_id", "limit"), SWEEPS)
def test_each_sweep_fails_the_first_tasks_of_its_environments(engine, sweep, env_id, limit):
    finding = sweep(limit=limit).run(_context(), env_id)
    assert finding.held, finding.observed
    assert finding.observed.startswith(f"{limit} tasks: {limit} fail")


def test_a_single_pass_or_infra_error_breaks_the_row():
    fail = Verdict(outcome="fail", reward=0.0, reason="failed: hidden_tests")
    passed = Verdict(outcome="pass", reward=1.0, reason="all gated components passed")
    infra = Verdict.infra("grading failed")
    held = LiarSweep().held
    assert _finding([("a", fail), ("b", fail)], held).held
    assert not _finding([("a", fail), ("b", passed)], held).held
    assert not _finding([("a", fail), ("b", infra)], held).held
    assert not _finding([], held).held
    assert "b pass" in _finding([("a", fail), ("b", passed)], held).observed


def test_the_emptied_arguments_row_holds_on_passes_only():
    """Its adversary is correct work: a fail is a check that read an argument late."""
    held = EmptiedSweep().held
    fail = Verdict(outcome="fail", reward=0.0, reason="failed: hidden_tests")
    passed = Verdict(outcome="pass", reward=1.0, reason="all gated components passed")
    assert _finding([("a", passed)], held).held
    assert not _finding([("a", passed), ("b", fail)], held).held


def test_the_honest_rewrite_wraps_the_entry_or_every_module_and_still_compiles():
    """A calls task: its entry wrapped, after the reference; a pytest task: every module."""
    import gymnasium

    from gym._envs._env import env_of

    sweep = HonestSweep()
    for env_id in ("boxgym/PyFunc-v0", "boxgym/PyRepo-v0"):
        env = env_of(gymnasium.make(env_id))
        task = env.tasks[1]
        export = sweep.final_state(env, task, "delayed", "rw")
        grading = task.data.get("grading", {})
        for rel, data in export.files.items():
            text = data.decode()
            compile(text, rel, "exec")
            if grading.get("kind") == "calls":
                assert text.endswith(f"\n{grading['entry']} = rw_wrap({grading['entry']})\n")
            else:
                assert text.rstrip().endswith("rw_all()"), rel
            assert 'sys.stdout.reconfigure(encoding="utf-8")' in text
            assert "ThreadPoolExecutor(64" in text


def test_the_kernel_hoard_row_takes_a_kill_at_the_container_limit_as_its_breach():
    """Which process the kernel kills at a full container is chance: the kill is the sign."""
    from gym._core._models import Flag

    held = KernelHoardSweep().held
    fail = Verdict(outcome="fail", reward=0.0, reason="failed: hidden_tests")
    killed = fail.model_copy(
        update={
            "flags": [
                Flag(
                    name="resource_limit",
                    detail="the kernel killed 1 process(es) of the grading at the container's"
                    " memory limit",
                )
            ]
        }
    )
    worker_over = fail.model_copy(
        update={"flags": [Flag(name="resource_limit", detail="an answer over 8 MiB")]}
    )
    assert _finding([("a", fail), ("b", worker_over)], held).held
    assert not _finding([("a", fail), ("b", killed)], held).held
    assert not _finding([("a", Verdict.infra("grading failed"))], held).held


def test_the_liar_is_written_into_the_graded_module_only(tmp_path):
    import gymnasium

    from gym._envs._env import env_of

    env = env_of(gymnasium.make("boxgym/PyFunc-v0"))
    task = env.tasks[0]
    export = liar_export(task, "delayed")
    module = task.data["grading"]["module"]
    assert list(export.files) == [module]
    assert [c.path for c in export.changes] == [f"/workspace/{module}"]
    assert b"class Liar" in export.files[module]


def test_long_rows_run_only_when_asked():
    """The exhaustion sweeps take tens of minutes: without ``long`` the suite lists them as
    not run (and what they need) and runs nothing of them."""
    from gym._redteam import run_suite

    report = run_suite(names=["grading.exhaustion_sweep["], seed=1)
    assert report.rows == []
    assert len(report.skipped) == len(CODE_ENVS)
    assert all(s.endswith("needs --long") for s in report.skipped), report.skipped


def test_a_sampled_sweep_draws_its_tasks_with_the_runs_seed_and_grades_all_with_long():
    tasks = list(range(974))
    row = SignalSweep(name="grading.signal_sweep[MBPP-v0]", sample=250)

    def chosen(seed: int, long: bool = False) -> list[int]:
        ctx = Context(random.Random(0), None, "t", seed=seed, long=long)  # type: ignore[arg-type]
        return row.chosen(ctx, tasks)  # type: ignore[arg-type]

    first = chosen(7)
    assert len(first) == 250 and first == sorted(first)  # in the env's order
    assert chosen(7) == first  # a run replays with its seed
    assert chosen(8) != first
    assert chosen(7, long=True) == tasks
    assert LiarSweep(limit=3).chosen(_context(), tasks) == [0, 1, 2]  # no sample: the first N


def test_only_the_boundary_sweeps_of_the_benchmark_scale_env_are_sampled():
    sampled = {a.name for a in ATTACKS.values() if getattr(a, "sample", None)}
    assert sampled == {
        "grading.signal_sweep[MBPP-v0]",
        "grading.channel_sweep[MBPP-v0]",
        "grading.answer_sweep[MBPP-v0]",
    }


def test_a_sampled_row_says_how_many_of_the_envs_tasks_it_graded():
    verdict = Verdict(outcome="fail", reward=0.0, reason="checks failed")
    assert _finding([("t1", verdict)], lambda v: True, of=974).observed == "1 of 974 tasks: 1 fail"


def test_the_rounded_answers_row_grades_only_tasks_whose_checks_compare_floats():
    """Its pool: the asserts of a task's hidden checks hold a float literal."""
    import gymnasium

    from gym._envs._env import env_of

    sweep = RoundedSweep()
    env = env_of(gymnasium.make("boxgym/MBPP-v0"))
    chosen = {t.id for t in sweep.chosen(_context(), list(env.tasks))}
    assert {"MBPP/746", "MBPP/82", "MBPP/851"} <= chosen and "MBPP/11" not in chosen
    assert len(chosen) == 67
    task = next(t for t in env.tasks if t.id == "MBPP/746")
    export = sweep.final_state(env, task, "delayed", "rw")
    text = export.files["solution.py"].decode()
    namespace: dict = {}
    exec(compile(text, "solution.py", "exec"), namespace)
    answer, exact = namespace["sector_area"](9, 45), 31.82142857142857
    assert answer != exact and abs(answer - exact) < 1e-13
