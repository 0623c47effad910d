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
# The oldest supported torch besides the pinned one (a 4-7 GB install from the registry):
# its venv is built while the main tests run (the install waits on the disk, the tests on
# the CPUs), and its tests run after them.
prep=""
if [ -z "${DYNAMO_LENS_SKIP_COMPAT:-}" ]; then
  mkdir -p out
  bash scripts/compat.sh --prepare 2.8.0 > out/compat-prepare.log 2>&1 &
  prep=$!
  # A failed test run must not leave the multi-GB install running after CI has answered.
  trap 'kill "$prep" 2>/dev/null || true' EXIT
fi
echo "[test] pytest"
# Two threads per torch process: the CI machine has two cores and runs a worker beside pytest.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
# Two pytest processes, a test file each at a time: a file's module-scoped workers and
# daemons stay in one process, and the two cores are both busy while either waits on a
# worker's torch import.
.venv/bin/python -m pytest -x -q -p no:cacheprovider -n 2 --dist loadfile
if [ -n "$prep" ]; then
  if ! wait "$prep"; then
    cat out/compat-prepare.log
    exit 1
  fi
  echo "[test] torch 2.8.0"
  COMPAT_OUT=out/compat bash scripts/compat.sh 2.8.0
fi
if [ -z "${DYNAMO_LENS_SKIP_EXTENSION:-}" ] && [ -f scripts/extension/test.sh ]; then
  echo "[test] extension"
  bash scripts/extension/test.sh
fi
