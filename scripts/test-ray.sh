#!/usr/bin/env bash
# The Ray executor's tests on a local multi-node Ray cluster (the ray extra): resume and
# no duplicates with a worker or node killed mid-run, no container left behind. Slower than
# the main suite (a cluster start per module), so a command of its own; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest -m ray -p no:cacheprovider tests/_run/test_ray.py "$@"
