#!/usr/bin/env bash
# Idempotent: a venv in .venv with the package (editable) and the pinned dev dependencies.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import importlib.util as u, dynamo_lens, torch, pygls, pytest_lsp, ruff, transformers, hypothesis, xdist, jsonschema, pre_commit, nbformat, nbclient, ipykernel, IPython; assert u.find_spec('vit_pytorch')" 2>/dev/null; then
  .venv/bin/python -m pip install -q --upgrade pip
  # torch==2.13.0 is pinned in the dev extra: the CPU build from this machine's disk.
  .venv/bin/python -m pip install -q -e ".[dev,realworld,notebook]"
  .venv/bin/python -m pip install -q --no-deps "vit-pytorch>=1.6"
fi
# The SARIF 2.1.0 JSON schema the tests validate our SARIF against, from the npm registry
# (Microsoft's SARIF SDK ships it); only the schema file is kept.
SCHEMA=.tools/sarif/sarif-schema-2.1.0.json
if [ ! -s "$SCHEMA" ]; then
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack -q --silent @microsoft/jest-sarif@1.0.0-beta.0 >/dev/null)
  mkdir -p .tools/sarif
  tar -xzf "$tmp"/microsoft-jest-sarif-1.0.0-beta.0.tgz -C "$tmp" package/lib/schemas/sarif-2.1.0-rtm.5.json
  mv "$tmp"/package/lib/schemas/sarif-2.1.0-rtm.5.json "$SCHEMA"
  rm -rf "$tmp"
fi
