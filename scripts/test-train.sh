#!/usr/bin/env bash
# Training that must converge (the tiny policy learns the learn family with GRPO, and
# with TRL's GRPOTrainer; the reward-hacking watch stops a leaky run). Minutes of CPU,
# so a command of its own; .ci/run calls it after the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/trl-site.sh  # TRL beside the venv, for tests/train/test_trl.py (once)
# Two processes, one file each at a time: one process kept 2 cores 77% busy (320 s against
# 276 s spread; each test's limit is at least 3x its time either way).
exec .venv/bin/python -m pytest -m train -p no:cacheprovider -n 2 --dist loadfile tests/train "$@"
