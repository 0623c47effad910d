#!/usr/bin/env bash
# Run the version-sensitive tests and the example workspace under each supported torch.
#   bash scripts/compat.sh                      all of 2.8.0 2.10.0 2.12.1 2.13.0 2.15.0
#   bash scripts/compat.sh 2.8.0                one version
#   COMPAT_OUT=out/compat bash scripts/compat.sh 2.8.0   (CI: results under out/, not bench/)
#   bash scripts/compat.sh --prepare 2.8.0      only build the venv
# Each version gets a venv in .tools/compat/torch-<v> (torch from the registry: CUDA builds
# that run on CPU, 4-7 GB each); 2.13.0 is the pinned dev venv (.venv).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PREPARE=""
if [ "${1:-}" = "--prepare" ]; then
  PREPARE=1  # only build the venvs (test.sh does it while the main tests run)
  shift
fi
VERSIONS=("$@")
[ ${#VERSIONS[@]} -eq 0 ] && VERSIONS=(2.8.0 2.10.0 2.12.1 2.13.0 2.15.0)
OUT="${COMPAT_OUT:-bench/compat}"
WORK=out/compat
mkdir -p "$OUT" "$WORK"
bash scripts/setup_python.sh
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"

venv_for() {
  local v="$1"
  if [ "$v" = "2.13.0" ]; then echo "$ROOT/.venv"; return; fi
  local dir="$ROOT/.tools/compat/torch-$v"
  if ! "$dir/bin/python" -c "import torch, dynamo_lens, pytest_lsp, xdist, yaml, nbformat, IPython, nbclient, ipykernel" 2>/dev/null; then
    python3 -m venv "$dir"
    # The pip constraint on this machine caps torch; lift it for this one install.
    PIP_CONSTRAINT=/dev/null "$dir/bin/pip" install -q "torch==$v" >&2
    PIP_CONSTRAINT=/dev/null "$dir/bin/pip" install -q -e "$ROOT" pytest pytest-lsp pytest-asyncio pytest-xdist pyyaml nbformat ipython ipykernel nbclient >&2
  fi
  echo "$dir"
}

if [ -n "$PREPARE" ]; then
  for v in "${VERSIONS[@]}"; do venv_for "$v" >/dev/null; done
  exit 0
fi

# The pinned torch's findings on the example workspace are the reference.
.venv/bin/dynamo-lens check example_workspace --checks breaks,recompiles --format json \
  > "$WORK/example-2.13.0.json" 2>/dev/null || true

status=0
for v in "${VERSIONS[@]}"; do
  py="$(venv_for "$v")/bin/python"
  echo "[compat] torch $v: $py"
  start=$(date +%s)
  set +e
  "$py" -m pytest -q -p no:cacheprovider -n 2 --dist loadfile tests/worker/test_parsing.py \
    tests/worker/test_example_workspace.py tests/worker/test_realcode.py tests/worker/test_runs.py \
    tests/worker/test_fallbacks.py tests/worker/test_fixes.py tests/worker/test_fix_safety.py \
    tests/worker/test_fix_output.py \
    tests/worker/test_pytest_plugin.py tests/worker/test_notebook_check.py tests/worker/test_kernel.py \
    --junitxml="$WORK/junit-$v.xml" > "$WORK/pytest-$v.log" 2>&1
  rc=$?
  "$(dirname "$py")/dynamo-lens" check example_workspace --checks breaks,recompiles --format json \
    > "$WORK/example-$v.json" 2>/dev/null
  set -e
  tail -1 "$WORK/pytest-$v.log"
  [ $rc -ne 0 ] && status=1
  echo "$v $rc $(( $(date +%s) - start ))" >> "$WORK/runs.txt"
done
.venv/bin/python scripts/compat_report.py "$WORK" "$OUT/RESULTS.md" "${VERSIONS[@]}"
exit $status
