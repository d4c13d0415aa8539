#!/usr/bin/env bash
# Every figure of the scale benchmarks from one command, one after the other on one machine:
# (a) and (b) against agentbox-rl, (d) memory and time to first step, and the engine's floor
# (bench/scale.py); then (c) the Ray executor against local threads at equal CPUs
# (bench/ray_overhead.py, the ray extra). Each writes its section of docs/benchmarks.md.
#
#   bench/scale.sh [scale.py options, e.g. --episodes 16 --reps 5 --concurrency 1,2,4,8]
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python bench/scale.py "$@"
.venv/bin/python bench/ray_overhead.py --episodes 16 --concurrency 2 --nodes 2 --repeats 5
