#!/usr/bin/env bash
# Validate the benchmark-scale environments in full (boxgym/MBPP-v0: 974 tasks, every
# oracle, noop, perturbed, regrade and cheating-panel check in real containers). Too long
# for the main suite (scripts/test.sh): run it after it. Resumable: results are kept per
# task in the run store (GYM_DB_URL, or trajectories/runs.db), so running it again after
# an interruption finishes only what is left. About 40 minutes on 2 idle cores (27
# measured before the panel, two tasks at once, docs/benchmarks.md; the panel's 3
# episodes per task add about 13). GYM_CONCURRENCY sets the tasks validated at once (3 by
# default).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest --run-benchmark -m benchmark -p no:cacheprovider "$@"
