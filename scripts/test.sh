#!/usr/bin/env bash
# Set up everything the tests need, then run the whole test suite on the real engine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev
set +e
.venv/bin/python -m pytest "$@"
code=$?
set -e
# pytest exits 5 when no test was collected: that is a failure of the suite, say so.
if [ "$code" = 5 ]; then echo "[test] pytest collected no tests" >&2; exit 1; fi
exit "$code"
