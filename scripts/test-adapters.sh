#!/usr/bin/env bash
# The verl and SkyRL adapters' contract tests (gym/train/_verl.py, gym/train/_skyrl.py)
# against the real packages and real containers. verl pins transformers <5.11 and pulls
# ray, vllm and more, which would break the venv's torch and transformers; so verl 0.9.1,
# skyrl-gym 0.4.0 and only the pure-Python packages their seams import go into
# .adapters-site (git-ignored), without deps, and the tests run with it on the path.
#
#     scripts/test-adapters.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
SITE=.adapters-site
if [ ! -f "$SITE/.installed" ]; then
  rm -rf "$SITE"
  "$PY" -m pip install --quiet --no-deps --target "$SITE" \
    verl==0.9.1 skyrl-gym==0.4.0 omegaconf==2.3.0 antlr4-python3-runtime==4.9.3 \
    hydra-core==1.3.2 tensordict==0.10.0 pyvers cloudpickle codetiming func_timeout \
    pandas "datasets>=4.7" "pyarrow>=24" "dill>=0.3,<0.4.2" "multiprocess<0.70.20" \
    xxhash pytz
  # both wheels ship top-level tests/ and scripts/ packages that would shadow ours
  rm -rf "$SITE/tests" "$SITE/scripts"
  touch "$SITE/.installed"
fi
export PYTHONPATH="$PWD/$SITE${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" -m pytest -m adapters -p no:cacheprovider tests/train/test_verl.py \
  tests/train/test_skyrl.py "$@"
