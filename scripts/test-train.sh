#!/usr/bin/env bash
# Training that must converge (the tiny policy learns the learn family with GRPO, and
# with TRL's GRPOTrainer; the reward-hacking watch stops a leaky run). Minutes of CPU,
# so a command of its own; .ci/run calls it after the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/trl-site.sh  # TRL beside the venv, for tests/train/test_trl.py (once)
exec .venv/bin/python -m pytest -m train -p no:cacheprovider tests/train "$@"
