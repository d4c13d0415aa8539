#!/usr/bin/env bash
# Installs TRL for bench/grpo_vs_trl.py only, into bench/.trl-site (git-ignored, with
# scripts/trl-site.sh), then
# runs the benchmark with that folder on its path. Nothing goes into the project's venv:
# the packages the venv already has (torch, transformers, accelerate, numpy...) are used
# from there; only TRL and what it needs beyond them are installed here, without deps.
#
#     bench/grpo_vs_trl.sh [--steps 3] [--seed 0]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
PYTHON=$PY scripts/trl-site.sh bench/.trl-site
exec "$PY" bench/grpo_vs_trl.py "$@"
