#!/usr/bin/env bash
# The unit part of the test suite: no Docker engine, no browser, nothing slow, spread over
# the cores (pytest-xdist; under a minute on 2 cores). For a quick check while working;
# scripts/test.sh runs everything.   scripts/test-unit.sh [pytest options]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then scripts/setup.sh dev,local; fi
exec .venv/bin/python -m pytest -p no:cacheprovider -n "${BOXGYM_TEST_WORKERS:-auto}" \
  -m "not docker and not slow and not browser" "$@"
