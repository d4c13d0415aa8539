#!/usr/bin/env bash
# The red-team suite: adversarial policies through every family's normal tools and
# injected faults, each judged from outside (outcome, reward, flags, markers, the host's
# view, the run store). Slower than the unit tests (about 30-60 minutes on 2 cores), so
# it is a command of its own; .ci/run calls it after the test suite.
#   scripts/redteam.sh [gym redteam options]   e.g. --family sql, --runtime runsc, --fast
# Writes the report to trajectories/redteam.json (BOXGYM_REDTEAM_OUT to change it) and
# exits non-zero when a row does not hold (known gaps only with --strict). With
# BOXGYM_REDTEAM_DOCS=1 it also refreshes the table in docs/security.md.
# GYM_REDTEAM_DESTRUCTIVE=1 adds the Docker daemon restart: only on a machine nobody
# else uses at the time.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/gym ]; then scripts/setup.sh dev; fi
OUT="${BOXGYM_REDTEAM_OUT:-trajectories/redteam.json}"
mkdir -p "$(dirname "$OUT")"
set +e
.venv/bin/gym redteam --json "$@" >"$OUT"
code=$?
set -e
if [ "${BOXGYM_REDTEAM_DOCS:-0}" = 1 ]; then .venv/bin/python scripts/security_table.py "$OUT"; fi
.venv/bin/python - "$OUT" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
rows = report["rows"]
bad = [r for r in rows if not r["held"]]
print(f"[redteam] {len(rows) - len(bad)}/{len(rows)} held in {report['seconds']:.0f}s "
      f"(runtime {report['runtime']}, seed {report['seed']})", file=sys.stderr)
for r in bad:
    why = f"known gap: {r['gap']}" if r["gap"] else "NOT HELD"
    print(f"[redteam]   {why}: {r['name']} ({r['env']}): {r['observed'][:200]}", file=sys.stderr)
PY
exit "$code"
