"""The suite can fail: with a wall taken down on purpose, the row that tests it does not hold.

Each test weakens one thing (tests/_redteam/weaken.py), runs the row aimed at it and
expects ``held: false``; the same row holds on the real configuration (the fast suite
and ``gym redteam`` show that). The grading one runs by default; the sandbox ones are
red-team tests (``pytest --redteam``), which scripts/redteam.sh runs after the suite.
"""

from __future__ import annotations

import pytest
import weaken

from gym._redteam import run_suite

pytestmark = pytest.mark.docker


def only(name: str, env: str) -> list:
    report = run_suite(names=[name], families=[env], concurrency=1)
    rows = [r for r in report.rows if r.name == name]
    assert len(rows) == 1, report.rows
    return rows


@pytest.mark.redteam
@pytest.mark.parametrize(
    ("switch", "row", "sign"),
    [
        (weaken.network_on, "sandbox.network_egress_dns", "breach"),
        (weaken.capability_added, "sandbox.capabilities", "breach"),
        (weaken.seccomp_off, "sandbox.seccomp", "breach"),
        (weaken.engine_seccomp, "sandbox.seccomp", "breach"),
        (weaken.keeper_dumpable, "sandbox.keeper_out_of_reach", "breach"),
        (weaken.host_pids, "sandbox.namespaces", "breach"),
        (weaken.shared_network, "sandbox.network_counters_between_episodes", "breach"),
        (weaken.engine_init, "sandbox.file_locks_between_agents_running_at_once", "breach"),
    ],
)
def test_a_weakened_sandbox_makes_its_row_fail(engine, switch, row, sign):
    with switch():
        (found,) = only(row, "boxgym/PyRepo-v0")
    assert found.held is False, found
    assert sign in found.observed


def test_readable_hidden_checks_make_the_reading_attack_pass(engine):
    with weaken.hidden_tests_readable():
        (found,) = only("calls.read_hidden_checks", "boxgym/PyFunc-v0")
    assert found.held is False, found
    assert found.observed.startswith("pass reward=1"), found
