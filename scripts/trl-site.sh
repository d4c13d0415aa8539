#!/usr/bin/env bash
# Installs TRL 1.16.0 into .trl-site (git-ignored) for the TRL integration's tests
# (tests/train/test_trl.py, gym.train.trl_rollout). Nothing goes into the project's venv:
# the packages the venv already has (torch, transformers, accelerate, numpy...) are used
# from there; only TRL and what it needs beyond them are installed here, without deps, so
# the venv's pinned torch and transformers stay. The tests put the folder on sys.path
# after the venv's own. Runs once; again after `rm -rf .trl-site`.
#
#     scripts/trl-site.sh [FOLDER]        # default .trl-site
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
SITE=${1:-.trl-site}
if [ ! -f "$SITE/.installed" ]; then
  rm -rf "$SITE"
  "$PY" -m pip install --quiet --no-deps --target "$SITE" \
    trl==1.16.0 "datasets>=4.7" "pyarrow>=24" pandas "dill>=0.3,<0.4.2" \
    "multiprocess<0.70.20" xxhash pytz
  touch "$SITE/.installed"
fi
