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
mkdir -p out
prep=""
if [ -z "${DYNAMO_LENS_SKIP_COMPAT:-}" ]; then
  setsid bash scripts/compat.sh --prepare 2.8.0 > out/compat-prepare.log 2>&1 &
  prep=$!
fi
# The extension's set-up (apt, npm ci, Node 24 and code-server, the .vsix: ~4 minutes, most of
# it waiting on the registries and the disk) is made while pytest runs, as the venv is.
ext=""
if [ -z "${DYNAMO_LENS_SKIP_EXTENSION:-}" ] && [ -f scripts/extension/setup.sh ]; then
  setsid bash scripts/extension/setup.sh > out/extension-setup.log 2>&1 &
  ext=$!
fi
# A failed test run must not leave a multi-GB install running after CI has answered: each runs
# in a session of its own (setsid), and its whole process group goes (npm, pip, apt-get).
stop_background() {
  for pid in $prep $ext; do kill -- "-$pid" 2>/dev/null || true; done
}
trap stop_background EXIT
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
  prep=""  # done: its number may be another process's by the time the trap runs
  echo "[test] torch 2.8.0"
  COMPAT_OUT=out/compat bash scripts/compat.sh 2.8.0
fi
if [ -n "$ext" ]; then
  echo "[test] extension"
  if ! wait "$ext"; then
    cat out/extension-setup.log
    exit 1
  fi
  ext=""
  bash scripts/extension/test.sh --set-up
fi
