#!/usr/bin/env bash
# The main job (README): set up from nothing, analyse example_workspace, then open it in a real
# VS Code (code-server on loopback) with the extension installed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup_python.sh
echo "[main] dynamo-lens check example_workspace --checks breaks,recompiles"
.venv/bin/dynamo-lens check example_workspace --checks breaks,recompiles || true
echo "[main] building the extension (.vsix with the bundled daemon) and code-server"
bash scripts/extension/setup.sh
echo "[main] opening example_workspace in code-server with the extension"
exec bash scripts/extension/open.sh
