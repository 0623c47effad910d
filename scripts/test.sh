#!/usr/bin/env bash
# The test command (README, .ci/run): set up from nothing, lint, type-check, run every test.
#   DYNAMO_LENS_SKIP_EXTENSION=1 scripts/test.sh   Python side only
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup_python.sh
echo "[test] ruff"
.venv/bin/ruff check daemon tests bench example_workspace
.venv/bin/ruff format --check daemon tests example_workspace
echo "[test] mypy"
.venv/bin/mypy
echo "[test] pytest"
# Two threads per torch process: the CI machine has two cores and runs a worker beside pytest.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
.venv/bin/python -m pytest -x -q -p no:cacheprovider
if [ -z "${DYNAMO_LENS_SKIP_COMPAT:-}" ]; then
  # The oldest supported torch besides the pinned one (a 4-7 GB install from the registry).
  echo "[test] torch 2.8.0"
  COMPAT_OUT=out/compat bash scripts/compat.sh 2.8.0
fi
if [ -z "${DYNAMO_LENS_SKIP_EXTENSION:-}" ] && [ -f scripts/extension/test.sh ]; then
  echo "[test] extension"
  bash scripts/extension/test.sh
fi
