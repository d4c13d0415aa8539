#!/usr/bin/env bash
# Installs TRL for bench/grpo_vs_trl.py only, into bench/.trl-site (git-ignored), then
# runs the benchmark with that folder on its path. Nothing goes into the project's venv:
# the packages the venv already has (torch, transformers, accelerate, numpy...) are used
# from there; only TRL and what it needs beyond them are installed here, without deps.
#
#     bench/grpo_vs_trl.sh [--steps 3] [--seed 0]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
SITE=bench/.trl-site
if [ ! -f "$SITE/.installed" ]; then
  rm -rf "$SITE"
  "$PY" -m pip install --quiet --no-deps --target "$SITE" \
    trl==1.16.0 "datasets>=4.7" "pyarrow>=24" pandas "dill>=0.3,<0.4.2" \
    "multiprocess<0.70.20" xxhash pytz
  touch "$SITE/.installed"
fi
exec "$PY" bench/grpo_vs_trl.py "$@"
