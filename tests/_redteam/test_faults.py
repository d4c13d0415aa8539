"""Injected faults end as they must, and leave the store and the engine clean.

Each fault of the red-team suite runs here as a test, in its first environment: its
own outcome (infra_error, fail, a resumed run...) and, after it, committed rows
byte-identical, no duplicate episode id, no container of this process left. The
cheap ones not already in the quick subset (test_fast_suite) run by default; all of
them with ``--redteam`` (scripts/redteam.sh runs the suite itself). The daemon restart needs ``GYM_REDTEAM_DESTRUCTIVE=1`` on top: it
restarts the shared Docker engine.
"""

from __future__ import annotations

import os

import pytest

from gym._redteam import registered, run_suite

pytestmark = pytest.mark.docker

CHEAP = {"fault.grader[raises]", "fault.policy_server[5xx]"}
"""Run by default (container_killed_mid_episode and policy_server[429] are in --fast)."""
FAULTS = sorted(n for n, a in registered().items() if a.kind == "fault")


def marks(name: str) -> list[pytest.MarkDecorator]:
    out = [] if name in CHEAP else [pytest.mark.redteam]
    if registered()[name].destructive:
        destructive = os.environ.get("GYM_REDTEAM_DESTRUCTIVE") == "1"
        out.append(pytest.mark.skipif(not destructive, reason="restarts the shared engine"))
    return out


@pytest.mark.parametrize("name", [pytest.param(n, marks=marks(n)) for n in FAULTS])
def test_fault_ends_as_it_must(engine, name):
    attack = registered()[name]
    report = run_suite(
        names=[name],
        families=[attack.envs[0]],
        kinds=["fault"],
        destructive=attack.destructive,
        concurrency=1,
    )
    (row,) = [r for r in report.rows if r.name == name]
    if row.gap:
        pytest.xfail(f"known gap ({row.gap}): {row.observed}")
    assert row.held, row.observed
