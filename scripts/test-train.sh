#!/usr/bin/env bash
# Training that must converge (the tiny policy learns the learn family with GRPO; the
# reward-hacking watch stops a leaky run). Minutes of CPU, so a command of its own;
# .ci/run calls it after the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest -m train -p no:cacheprovider tests/train "$@"
