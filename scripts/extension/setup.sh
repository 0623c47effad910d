#!/usr/bin/env bash
# Sets up everything the extension needs, idempotently:
#   Debian chromium + libkrb5-dev, npm ci, Node 24 + code-server in .tools/, the bundled Python
#   libraries and daemon, the esbuild bundle, and dynamo-lens-<version>.vsix.
# Env: SKIP_APT=1 (no apt-get), SKIP_CODE_SERVER=1 (no code-server install: packaging only).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
say() { echo "[setup] $*"; }

if [ "${SKIP_APT:-0}" != 1 ]; then
  need=()
  [ -x /usr/bin/chromium ] || need+=(chromium)
  dpkg -s libkrb5-dev >/dev/null 2>&1 || need+=(libkrb5-dev)
  if [ ${#need[@]} -gt 0 ]; then
    say "apt-get install ${need[*]}"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi

# npm ci only when package-lock.json changed since the last install.
LOCK_SUM="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -f node_modules/.dynamo-lens-lock ] || [ "$(cat node_modules/.dynamo-lens-lock)" != "$LOCK_SUM" ]; then
  say "npm ci"
  npm ci --no-audit --no-fund
  echo "$LOCK_SUM" > node_modules/.dynamo-lens-lock
fi
# esbuild's postinstall fetches nothing (the binary is an optional dependency), but check it runs.
npx --no-install esbuild --version >/dev/null

if [ "${SKIP_CODE_SERVER:-0}" != 1 ]; then
  bash scripts/extension/install_code_server.sh
fi

say "bundling the daemon and its Python libraries"
bash scripts/extension/bundle_python.sh
say "building and packaging"
npx --no-install vsce package --no-dependencies --allow-missing-repository --skip-license \
  --readme-path extension/README.md --no-rewrite-relative-links
ls -l "$ROOT"/dynamo-lens-*.vsix
