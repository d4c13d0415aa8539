#!/usr/bin/env bash
# The main job: set up boxgym (Docker engine, base image, images, a virtual environment
# with the offline local model) and run a benchmark of the bundled environments with the
# default policy (SmolLM2-135M-Instruct on CPU), then print the report.
#   scripts/bench.sh [extra `gym run` options]     e.g. --limit 5 -k 2
# BOXGYM_LIMIT (default 2) eval tasks per environment, BOXGYM_MAX_STEPS (default 4) tool
# calls per episode (the CPU model is slow); the run is resumable: the same
# command again skips the episodes already stored.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh local
exec .venv/bin/gym run bundled --policy local --limit "${BOXGYM_LIMIT:-2}" --max-steps "${BOXGYM_MAX_STEPS:-4}" -k 1 -c 1 \
  --split eval --label "bundled, local default policy" "$@"
