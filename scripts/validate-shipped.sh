#!/usr/bin/env bash
# Validate every shipped task of every environment (but the benchmark-scale ones, see
# scripts/validate-benchmarks.sh): the oracle passes, noop fails, a forbidden write is
# flagged, regrading is stable, every policy of the cheating panel fails (a liar object,
# constants, the visible example echoed, an empty answer; docs/authoring.md)
# (`gym env validate --all -k 1`, as a test). The main suite
# (scripts/test.sh) validates a daily sample; .ci/run calls this after it. Also MBPP's
# shipped data: all 974 reference solutions through the value codec, the index the
# importer makes, and 20 records imported and validated in real containers.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest -m shipped -p no:cacheprovider tests/test_shipped_tasks.py tests/environments/test_mbpp.py "$@"
