#!/usr/bin/env bash
# Bundles the daemon and its pure-Python dependencies into extension/bundled/ for the .vsix:
#   extension/bundled/libs    pygls, lsprotocol, msgpack, watchdog and their dependencies
#   extension/bundled/daemon  a copy of daemon/dynamo_lens
# The extension puts both first on PYTHONPATH when it starts `<interpreter> -m dynamo_lens serve`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; else PY=python3; fi
fi
OUT="$ROOT/extension/bundled"
LIBS="$OUT/libs"
STAMP="$OUT/.libs-stamp"
REQS="pygls>=2.0,<3 lsprotocol>=2025.0.0 msgpack>=1.0 watchdog>=4.0"
WANT="$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])') $REQS"

mkdir -p "$OUT"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -d "$LIBS/pygls" ]; then
  echo "[bundle_python] libs up to date ($LIBS)"
else
  echo "[bundle_python] installing $REQS into $LIBS with $PY"
  rm -rf "$LIBS"
  # shellcheck disable=SC2086
  "$PY" -m pip install --quiet --disable-pip-version-check --no-compile --target "$LIBS" $REQS
  # Console scripts and caches are not needed inside the extension.
  rm -rf "$LIBS/bin"
  find "$LIBS" -name __pycache__ -type d -prune -exec rm -rf {} +
  echo "$WANT" > "$STAMP"
fi

echo "[bundle_python] copying daemon/dynamo_lens → $OUT/daemon/dynamo_lens"
rm -rf "$OUT/daemon"
mkdir -p "$OUT/daemon"
# Without __pycache__, not copied then removed: scripts/test.sh bundles while pytest runs, and a
# .pyc Python is writing there (a temporary file it renames) can vanish under cp.
tar -C "$ROOT/daemon" --exclude=__pycache__ -cf - dynamo_lens | tar -C "$OUT/daemon" -xf -
ls "$LIBS" | sed 's/^/[bundle_python]   /' | grep -v dist-info || true
