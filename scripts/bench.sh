#!/usr/bin/env bash
# The main job: set up boxgym (Docker engine, base image, images, a virtual environment
# with the offline local model) and run a benchmark of the bundled environments with the
# default policy (SmolLM2-135M-Instruct greedy and constrained, on one CPU thread), then
# print the report and the command that opens the run in the viewer (`gym view RUN`).
#   scripts/bench.sh [extra `gym run` options]     e.g. --limit 5 -k 2
# What it runs: 12 episodes, one at a time: the first BOXGYM_LIMIT (default 1) eval tasks
# of each bundled environment with an eval split, at most BOXGYM_MAX_STEPS (default 3)
# tool calls each (the CPU model is slow: 4 calls took 8.4 min where 3 take 6.8, and two
# tasks each, 21 episodes once the learn family had four environments, 10 min 11 s with
# other work on the machine). Measured on 2 cores with set-up done (docs/benchmarks.md,
# "The main job"), nearly all of it the model on one core: about twice that when other
# work takes half of the cores. A task with a simulated customer gets the same local
# model as its user. BOXGYM_LIMIT=2 runs the two tasks of each (about 9 minutes idle).
# Its log grows as it runs (`scripts/bench.sh > log 2>&1`, then `tail -f log`): a line per
# episode and a heartbeat every 30 s on stderr, then the report.
# The run is resumable: the same command again skips the episodes already stored.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh local
exec .venv/bin/gym run bundled --policy local --limit "${BOXGYM_LIMIT:-1}" --max-steps "${BOXGYM_MAX_STEPS:-3}" -k 1 -c 1 \
  --split eval --user local --label "bundled, local default policy" "$@"
