#!/usr/bin/env bash
# The main job: set up boxgym (Docker engine, base image, images, a virtual environment
# with the offline local model) and run a benchmark of the bundled environments with the
# default policy (SmolLM2-135M-Instruct on CPU), then print the report.
#   scripts/bench.sh [extra `gym run` options]     e.g. --limit 5 -k 2
# BOXGYM_LIMIT (default 2) tasks per environment; the run is resumable: the same
# command again skips the episodes already stored.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh local
exec .venv/bin/gym run bundled --policy local --limit "${BOXGYM_LIMIT:-2}" -k 1 -c 1 \
  --split eval --label "bundled, local default policy" "$@"
