#!/usr/bin/env bash
# The main job: set up boxgym (Docker engine, base image, images, a virtual environment
# with the offline local model) and run a benchmark of the bundled environments with the
# default policy (SmolLM2-135M-Instruct greedy and constrained, on one CPU thread), then
# print the report and the command that opens the run in the viewer (`gym view RUN`).
#   scripts/bench.sh [extra `gym run` options]     e.g. --limit 5 -k 2
# What it runs: 21 episodes, one at a time: the first BOXGYM_LIMIT (default 2) eval tasks
# of each bundled environment with an eval split, at most BOXGYM_MAX_STEPS (default 3)
# tool calls each. Measured on 2 idle cores with set-up done (docs/benchmarks.md, "The
# main job"): 6 min 35 s, nearly all of it the model on one core (about twice that when
# other work takes half of the cores). Each turn reuses the keys and values of the
# episode's conversation so far (before that cache, the same run took about 9 minutes and
# the default was one task each). A task with a simulated customer gets the same local
# model as its user. BOXGYM_LIMIT=1 runs one task each (12 episodes, 3 min 50 s).
# Its log grows as it runs (`scripts/bench.sh > log 2>&1`, then `tail -f log`): a line per
# episode and a heartbeat every 30 s on stderr, then the report.
# The run is resumable: the same command again skips the episodes already stored.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh local
exec .venv/bin/gym run bundled --policy local --limit "${BOXGYM_LIMIT:-2}" --max-steps "${BOXGYM_MAX_STEPS:-3}" -k 1 -c 1 \
  --split eval --user local --label "bundled, local default policy" "$@"
