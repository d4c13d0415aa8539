"""The false-positive rows (gym/_redteam/_false_positive.py): they hold, and they can fail.

Every row is correct work plus an ordinary lookalike of a flag; it holds when the work
passes with reward 1 and no gating flag. With notes made gating again (what flags
decided from text or names did before), the same rows must not hold: the rows see
the difference.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from unittest import mock

import pytest

from gym._core._models import Flag
from gym._grading import FLAG_KINDS, _trajectory
from gym._redteam import registered, run_suite
from gym._redteam._false_positive import ENVS, ROWS, TASKS, rows

ENV = "boxgym/PyRepo-v0"
JUDGED = {"early_exit", "report_forgery", "tests_skipped", "resource_limit"}
"""Flags the judge raises from what it saw (no note to weaken: their rows check the
judge does not mistake ordinary code, a __main__ guard or a print, for them)."""
NOT_CODE = {"forbidden_tool", "forbidden_argument", "loop", "claimed_success", "not_plain"}
"""Flags no code task gates on: task rules no shipped code task declares, notes of every
family, and the judge's explanation of a check that failed on its own."""


def test_every_flag_of_the_code_families_has_a_false_positive_row():
    covered = {name.split("[")[0] for name, _, _ in ROWS}
    wanted = set(FLAG_KINDS) - NOT_CODE - {"scratch_file", "hidden_path_planted"}
    assert wanted <= covered, sorted(wanted - covered)


def test_the_rows_are_registered_for_every_code_env():
    attacks = {n: a for n, a in registered().items() if n.startswith("false_positive.")}
    assert len(attacks) == len(ROWS)
    for attack in attacks.values():
        assert attack.envs == ENVS
        assert {e: attack.task_for(e) for e in ENVS} == TASKS
        assert attack.expected.startswith("pass reward=1, no gating flag")


def test_a_row_expects_its_note():
    by_name = {r.name: r for r in rows()}
    row = by_name["false_positive.network_attempt[url_in_command]"]
    assert row.expect.outcomes == frozenset({"pass"})
    assert row.expect.flags == frozenset({"network_attempt"})


@contextlib.contextmanager
def notes_gate() -> Iterator[None]:
    """The weakened configuration: every note fails the episode, as text flags once did."""

    def gating(name: str, detail: str) -> Flag:
        return Flag(name=name, detail=detail)

    with mock.patch.object(_trajectory, "_note", gating):
        yield


def only(name: str) -> list:
    report = run_suite(names=[name], families=[ENV], concurrency=1)
    found = [r for r in report.rows if r.name == name]
    assert len(found) == 1, report.rows
    return found


WEAKENED = [
    "false_positive.outside_allowed_paths[scratch_files]",
    "false_positive.network_attempt[url_in_command]",
    "false_positive.git_history_read[git_log_all]",
    "false_positive.spoofed_test_output[tests_passed_comment]",
    "false_positive.tests_touched[own_test_files]",
]


@pytest.mark.docker
@pytest.mark.parametrize("name", WEAKENED)
def test_a_row_holds_and_fails_when_notes_gate(engine, name):
    (real,) = only(name)
    assert real.held, real
    assert real.observed.startswith("pass reward=1"), real
    with notes_gate():
        (weak,) = only(name)
    assert weak.held is False, weak
    assert weak.observed.startswith("fail reward=0"), weak
