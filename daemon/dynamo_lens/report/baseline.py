"""Baselines: the findings a team has accepted, so that only new ones fail a check.

A baseline file is JSON, sorted and with relative paths so that it diffs well in review. Each
entry is matched by its fingerprint alone (report/fingerprint.py); the path, line and message
beside it are for the people reading it. A finding is ``known`` when its fingerprint is in the
baseline (as many times as it is there), else ``new``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..findings import Finding, Severity
from .fingerprint import assign, relative

VERSION = 1
KNOWN, NEW = "known", "new"


class BaselineError(Exception):
    """A baseline that cannot be read or written; the message says which and why."""


def read(path: Path) -> Counter[str]:
    """The fingerprints a baseline file accepts, with how many times each."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(
            f"no baseline at {path}: write one with --write-baseline {path}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"cannot read the baseline {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BaselineError(f"the baseline {path} is not JSON: {exc}") from None
    entries = doc.get("findings") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or doc.get("version") != VERSION:
        raise BaselineError(
            f"the baseline {path} is not a dynamo-lens baseline (version {VERSION}); "
            "write it again with --write-baseline"
        )
    known: Counter[str] = Counter()
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("fingerprint"), str):
            raise BaselineError(f"the baseline {path} has an entry without a fingerprint: {e!r}")
        known[e["fingerprint"]] += 1
    return known


def document(findings: Iterable[Finding], root: Path) -> dict[str, Any]:
    """The baseline of ``findings`` (fingerprinted here if they are not yet)."""
    items = list(findings)
    if any(not f.fingerprint for f in items):
        assign(items, root)
    entries = [
        {
            "fingerprint": f.fingerprint,
            "path": relative(f.path, root),
            "line": f.line,
            "kind": f.kind.value,
            "gb_id": f.gb_id,
            "message": f.message.splitlines()[0] if f.message else "",
        }
        for f in items
    ]
    entries.sort(key=lambda e: (e["path"], e["line"], e["kind"], e["fingerprint"]))
    return {"version": VERSION, "tool": "dynamo-lens", "findings": entries}


def write(path: Path, findings: Iterable[Finding], root: Path) -> int:
    """Write the baseline of ``findings`` to ``path`` (whole or not at all); the count."""
    doc = document(findings, root)
    text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise BaselineError(f"cannot write the baseline {path}: {exc}") from None
    return len(doc["findings"])


def mark(findings: Iterable[Finding], known: Counter[str], root: Path) -> None:
    """Set each finding's ``baseline`` to ``known`` or ``new`` against ``known``."""
    items = list(findings)
    if any(not f.fingerprint for f in items):
        assign(items, root)
    left = Counter(known)
    for f in sorted(items, key=lambda f: (f.path, f.line, f.column)):
        if left[f.fingerprint] > 0:
            left[f.fingerprint] -= 1
            f.baseline = KNOWN
        else:
            f.baseline = NEW


def failing(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that fail a check: warnings and errors not in the baseline."""
    return [f for f in findings if f.severity.rank >= Severity.WARNING.rank and f.baseline != KNOWN]
