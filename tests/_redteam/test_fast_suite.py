"""The quick subset of the red-team suite, through the CLI: every row holds (or is a known gap).

The whole suite is `scripts/redteam.sh` (``gym redteam --json``); this subset keeps one
row of each family and of the policy and container faults in the default test run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.redteam]  # scripts/redteam.sh runs these

GYM = os.path.join(os.path.dirname(sys.executable), "gym")


def test_the_fast_subset_holds_and_reports_one_json_object(engine):
    out = subprocess.run(
        [GYM, "redteam", "--fast", "--json", "-c", "4"],
        capture_output=True,
        text=True,
        timeout=1500,
    )
    report = json.loads(out.stdout)
    rows = report["rows"]
    assert {r["kind"] for r in rows} == {"attack", "fault"}
    assert {r["env"] for r in rows} >= {
        "boxgym/PyRepo-v0",
        "boxgym/PyFunc-v0",
        "boxgym/SQL-v0",
        "boxgym/Support-v0",
    }
    failed = [r for r in rows if not r["held"] and not r["gap"]]
    assert not failed, json.dumps(failed, indent=1)
    assert out.returncode == 0, out.stderr[-2000:]
    assert all(set(r) >= {"name", "kind", "env", "expected", "observed", "held"} for r in rows)
