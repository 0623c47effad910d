"""Baselines: the findings a team has accepted, so that only new ones fail a check.

A baseline file is JSON, sorted and with relative paths so that it diffs well in review. Each
entry is matched by its fingerprint alone (report/fingerprint.py); the path, line and message
beside it are for the people reading it. A finding is ``known`` when its fingerprint is in the
baseline (as many times as it is there) at the same or a higher severity, else ``new``. Errors
(a file that could not be analysed) are never written and never known.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..findings import Finding, Kind, Severity
from .fingerprint import assign, relative

VERSION = 1
KNOWN, NEW = "known", "new"


class BaselineError(Exception):
    """A baseline that cannot be read or written; the message says which and why."""


# What a baseline accepts: for each fingerprint, the severities (ranks) of its entries.
Known = dict[str, list[int]]


def read(path: Path) -> Known:
    """The findings a baseline file accepts: each fingerprint with its entries' severities."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise BaselineError(
            f"no baseline at {path}: write one with --write-baseline {path}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"cannot read the baseline {path}: {exc}") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise BaselineError(f"the baseline {path} is not JSON: {exc}") from None
    entries = doc.get("findings") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or doc.get("version") != VERSION:
        raise BaselineError(
            f"the baseline {path} is not a dynamo-lens baseline (version {VERSION}); "
            "write it again with --write-baseline"
        )
    known: Known = {}
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("fingerprint"), str):
            raise BaselineError(f"the baseline {path} has an entry without a fingerprint: {e!r}")
        try:
            rank = Severity(e.get("severity", "error")).rank
        except ValueError:
            raise BaselineError(
                f"the baseline {path} has an entry of no known severity: {e!r}"
            ) from None
        known.setdefault(e["fingerprint"], []).append(rank)
    return known


def unwritable(path: Path) -> str | None:
    """Why a report or baseline cannot be written at ``path`` (asked before a long run), or
    None."""
    if path.is_dir():
        return "it is a folder"
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        return f"no such folder {parent}"
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return "permission denied"
    return None


def document(findings: Iterable[Finding], root: Path) -> dict[str, Any]:
    """The baseline of ``findings`` (fingerprinted here if they are not yet)."""
    # An analysis that failed is never accepted: a baseline must not hide what it kept from
    # being found.
    items = [f for f in findings if f.kind is not Kind.ERROR]
    if any(not f.fingerprint for f in items):
        assign(items, root)
    entries = [
        {
            "fingerprint": f.fingerprint,
            "path": relative(f.path, root),
            "line": f.line,
            "kind": f.kind.value,
            "severity": f.severity.value,
            "gb_id": f.gb_id,
            "message": f.message.splitlines()[0] if f.message else "",
        }
        for f in items
    ]
    entries.sort(key=lambda e: (e["path"], e["line"], e["kind"], e["fingerprint"]))
    return {"version": VERSION, "tool": "dynamo-lens", "findings": entries}


def write(path: Path, findings: Iterable[Finding], root: Path) -> int:
    """Write the baseline of ``findings`` to ``path`` (whole or not at all: a temporary file
    renamed over it; through a link, to the file it names); the count."""
    doc = document(findings, root)
    text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    target = Path(os.path.realpath(path))
    if target.exists() and not target.is_file():
        raise BaselineError(f"cannot write the baseline {path}: it is not a regular file")
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    except OSError as exc:
        raise BaselineError(f"cannot write the baseline {path}: {exc}") from None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
                fh.flush()
                os.fchmod(fh.fileno(), mode)
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise BaselineError(f"cannot write the baseline {path}: {exc}") from None
    return len(doc["findings"])


def mark(findings: Iterable[Finding], known: Known, root: Path) -> None:
    """Set each finding's ``baseline``: ``known`` when the baseline has an entry left for its
    fingerprint at the same or a higher severity, else ``new``. An error (an analysis that
    failed) is always new."""
    items = list(findings)
    if any(not f.fingerprint for f in items):
        assign(items, root)
    left = {fp: sorted(ranks) for fp, ranks in known.items()}
    for f in sorted(items, key=lambda f: (f.path, f.line, f.column)):
        ranks = left.get(f.fingerprint, [])
        at = next((i for i, r in enumerate(ranks) if r >= f.severity.rank), None)
        if f.kind is Kind.ERROR or at is None:
            f.baseline = NEW
        else:
            ranks.pop(at)
            f.baseline = KNOWN


def failing(findings: Iterable[Finding], floor: Severity = Severity.WARNING) -> list[Finding]:
    """The findings that fail a check: those at ``floor`` or above not in the baseline."""
    return [f for f in findings if f.severity.rank >= floor.rank and f.baseline != KNOWN]
