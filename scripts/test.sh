#!/usr/bin/env bash
# Set up everything the tests need, then run the whole test suite on the real engine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev,local,ray,lora
# The store's tests run against a real PostgreSQL server that the tests start themselves.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  echo "[test] installing Debian's postgresql (server binaries for the store tests)" >&2
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
fi
# The viewer's browser test drives Debian's headless Chromium through Playwright.
if [ ! -x /usr/bin/chromium ]; then
  echo "[test] installing Debian's chromium (headless browser for the viewer test)" >&2
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
# Spread over the cores, a file per worker (its fixtures set up once): the suite waits on
# containers, servers and timeouts about half of its time, so one worker more than the
# cores keeps them busy (2 cores: 10 min instead of 20). BOXGYM_TEST_WORKERS=0: one process.
workers="${BOXGYM_TEST_WORKERS:-$(( $(nproc) + 1 > 8 ? 8 : $(nproc) + 1 ))}"
spread=()
if [ "$workers" != 0 ]; then spread=(-n "$workers" --dist loadfile); fi
set +e
.venv/bin/python -m pytest "${spread[@]}" --durations=25 "$@"  # the slowest, for CI's budget
code=$?
set -e
# pytest exits 5 when no test was collected: that is a failure of the suite, say so.
if [ "$code" = 5 ]; then echo "[test] pytest collected no tests" >&2; exit 1; fi
exit "$code"
