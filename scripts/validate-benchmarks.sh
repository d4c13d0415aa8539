#!/usr/bin/env bash
# Validate the benchmark-scale environments in full (boxgym/MBPP-v0: 974 tasks, every
# oracle, noop, perturbed, regrade and cheating-panel check in real containers; and all
# 200 of boxgym/BFCL-MultiTurn-v0's, of which scripts/validate-shipped.sh validates a
# fifth a day). Too long for the main suite (scripts/test.sh): run it after it. MBPP's
# part is resumable: results are kept per task in the run store (GYM_DB_URL, or
# trajectories/runs.db), so running it again after an interruption finishes only what is
# left. About 45 minutes on 2 idle cores (MBPP: 27 measured before the panel, two tasks at
# once, docs/benchmarks.md; the panel's 3 episodes per task add about 13; BFCL: 4.5).
# GYM_CONCURRENCY sets MBPP's tasks validated at once (3 by default).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest --run-benchmark -m benchmark -p no:cacheprovider "$@"
