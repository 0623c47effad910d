#!/usr/bin/env bash
# The extension's checks: type check, lint, unit tests (no VS Code needed), then the end-to-end
# tests in a real VS Code (code-server + Chromium) with the packaged .vsix and the real daemon.
#   scripts/extension/test.sh            everything (runs setup.sh first; idempotent)
#   scripts/extension/test.sh --unit     type check, lint and unit tests only
#   scripts/extension/test.sh --smoke    ... plus the e2e smoke test (activation, status item)
#   scripts/extension/test.sh --set-up   everything, setup.sh already run (scripts/test.sh)
#   Extra arguments after -- go to extension/test/e2e/run.mjs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
MODE=full
SET_UP=""
E2E_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --unit) MODE=unit ;;
    --smoke) MODE=smoke ;;
    --set-up) SET_UP=1 ;;
    --) shift; E2E_ARGS=("$@"); break ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
say() { echo "[test] $*"; }

if [ "$MODE" = unit ]; then
  [ -d node_modules ] || npm ci --no-audit --no-fund
elif [ -z "$SET_UP" ]; then
  bash scripts/extension/setup.sh
fi
say "tsc --noEmit"
npx --no-install tsc --noEmit -p .
say "eslint"
npx --no-install eslint extension esbuild.mjs eslint.config.mjs
say "unit tests"
node esbuild.mjs --unit-tests
node --test --test-reporter=spec out/unit/*.test.js
[ "$MODE" = unit ] && exit 0

if [ "$MODE" = smoke ]; then
  say "e2e smoke test"
  node extension/test/e2e/run.mjs --smoke "${E2E_ARGS[@]}"
else
  say "e2e tests (code-server + Chromium)"
  node extension/test/e2e/run.mjs "${E2E_ARGS[@]}"
fi
