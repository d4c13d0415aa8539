"""Reward hacks against the grader, run as scripted episodes on the real engine.

Every attack of `attacks.py` must end as ``fail`` (reward 0, never ``infra_error``), with
its flag where one applies; the reference fixes of the attacked tasks still pass; and a
deliberately weakened grader (the checks run in the process of the code under test, as
before issue 9) lets the in-process attacks pass: the suite can fail.
"""

from __future__ import annotations

import sys
from pathlib import Path

import gymnasium
import pytest

from gym import ScriptPolicy, run_episode
from gym._grading import _checks as code_grading

sys.path.insert(0, str(Path(__file__).parent))
from attacks import BY_NAME, DIGITS, MDTOC, WORDSTATS, reference_fix  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.redteam]  # scripts/redteam.sh runs these

WEAKENED = [
    "testreport_outcome_patched",
    "report_encoder_rewritten_via_main",
    "report_hookimpls_replaced_from_gc",
    "pluggy_wrapper_registered_from_gc",
    "caller_frame_by_computed_getframe",
    "hidden_tests_read_by_path_pieces",
    "lying_eq_lambda_true",
    "lying_eq_stateful_first_call",
]


def play(name: str):
    attack = BY_NAME[name]
    policy = ScriptPolicy(list(attack.calls))
    return run_episode(gymnasium.make(attack.env_id), policy, task_id=attack.task)


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_the_attack_fails_with_its_flag(engine, name):
    result = play(name)
    assert result.outcome == "fail", result.verdict
    assert result.reward == 0.0
    flags = {f.name for f in result.verdict.flags}
    if BY_NAME[name].flag:
        assert BY_NAME[name].flag in flags, result.verdict


@pytest.mark.parametrize(
    ("env_id", "task"),
    [("boxgym/PyRepo-v0", WORDSTATS), ("boxgym/PyRepo-v0", MDTOC), ("boxgym/PyFunc-v0", DIGITS)],
)
def test_the_reference_fix_of_an_attacked_task_passes_unflagged(engine, env_id, task):
    result = run_episode(gymnasium.make(env_id), ScriptPolicy(reference_fix(task)), task_id=task)
    assert result.outcome == "pass", result.verdict
    assert result.verdict.flags == []


@pytest.mark.parametrize("name", WEAKENED)
def test_a_weakened_grader_lets_in_process_attacks_pass(engine, monkeypatch, name):
    """Control: with the checks in the code's own process, the same attacks win."""
    assert BY_NAME[name].in_process
    real = code_grading._runner_spec
    weakened = lambda spec: {**real(spec), "unsafe_in_process": True}  # noqa: E731
    monkeypatch.setattr(code_grading, "_runner_spec", weakened)
    result = play(name)
    assert result.outcome == "pass", result.verdict
