"""Golden files: reviewed snapshots of what Dynamo Lens prints, compared byte for byte.

Machine-specific parts are normalised first, the same way when recording and when comparing:
the workspace becomes ``/ws``, any ``site-packages`` folder ``/site-packages``, the Python
standard library ``/python/lib``; source text read from library files (which differs with what
is installed where) and times of day are dropped. ``--update-golden`` rewrites the goldens
instead of comparing; review the diff and commit it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
WS = "/ws"
_SITE = re.compile(r"(?:/[^\s\"'<>:]*)?/(?:site|dist)-packages/")
_STDLIB = re.compile(r"(?:/[^\s\"'<>:]*)?/lib/python3\.\d+/")
# Volatile by nature: when a report was made, how long it took (a check's compile time by
# function is timed, and ordered by time).
_VOLATILE = {"measured_at", "loaded_at", "duration", "compile_time"}


def normalise_text(text: str, root: Path) -> str:
    text = text.replace(str(root), WS)
    text = _SITE.sub("/site-packages/", text)
    return _STDLIB.sub("/python/lib/", text)


def normalise(data: Any, root: Path) -> Any:
    """JSON-able ``data`` with machine-specific paths and volatile values replaced."""
    return _scrub(json.loads(normalise_text(json.dumps(data), root)))


def _scrub(obj: Any) -> Any:
    if isinstance(obj, dict):
        out = {k: (0 if k in _VOLATILE else _scrub(v)) for k, v in obj.items()}
        # A frame outside the workspace: its code line is whatever file is installed there.
        if "code" in out and isinstance(out.get("path"), str) and not out["path"].startswith(WS):
            out["code"] = ""
        return out
    if isinstance(obj, list):
        return [_scrub(v) for v in obj]
    return obj


def check(request: pytest.FixtureRequest, name: str, actual: str) -> None:
    """``actual`` equals the golden file ``name`` (or, with --update-golden, becomes it)."""
    path = GOLDEN / name
    actual = actual.rstrip("\n") + "\n"
    if request.config.getoption("--update-golden"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual)
        return
    assert path.exists(), f"no golden {path}: run pytest with --update-golden, then review it"
    expected = path.read_text()
    assert actual == expected, (
        f"{name} differs from its golden; if the change is intended, run pytest with "
        "--update-golden and review the diff"
    )


def dumps(data: Any) -> str:
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False)
