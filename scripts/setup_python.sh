#!/usr/bin/env bash
# Idempotent: a venv in .venv with the package (editable) and the pinned dev dependencies.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import importlib.util as u, dynamo_lens, torch, pygls, pytest_lsp, ruff, transformers, hypothesis; assert u.find_spec('vit_pytorch')" 2>/dev/null; then
  .venv/bin/python -m pip install -q --upgrade pip
  # torch==2.13.0 is pinned in the dev extra: the CPU build from this machine's disk.
  .venv/bin/python -m pip install -q -e ".[dev,realworld]"
  .venv/bin/python -m pip install -q --no-deps "vit-pytorch>=1.6"
fi
