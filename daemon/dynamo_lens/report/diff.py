"""``dynamo-lens diff OLD NEW``: which findings are new, gone or unchanged between two results,
matched by fingerprint (line moves do not count).

OLD and NEW are JSON reports of ``check``, ``run`` or ``trace`` (``--format json``), or torch
trace folders (``TORCH_TRACE=dir``), read as ``trace`` reads them. Uses: the same check under
two torches (an upgrade), or a pull request's base and head.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..findings import Finding, from_wire, to_wire
from .fingerprint import assign, relative


class DiffError(Exception):
    """A side that cannot be read; the message says which and why."""


def read_report(path: Path) -> list[Finding]:
    """The findings of a JSON report (a trace folder is read by the caller, as ``trace``)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise DiffError(f"no such file or folder: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise DiffError(
            f"{path} is neither a JSON report (--format json) nor a trace folder: {exc}"
        ) from None
    raw = doc.get("findings") if isinstance(doc, dict) else None
    if isinstance(doc, dict) and doc.get("tool") == "dynamo-lens":
        raise DiffError(
            f"{path} is a baseline; diff compares reports (check, run or trace --format json) "
            "or trace folders: check against a baseline with --baseline"
        )
    if not isinstance(raw, list):
        raise DiffError(f"{path} is not a dynamo-lens JSON report (no findings list)")
    try:
        return [from_wire(f, Finding) for f in raw]
    except Exception as exc:  # cattrs says what did not fit, in its own words
        raise DiffError(f"{path}: a finding is not of dynamo-lens' shape: {exc}") from None


def fingerprinted(findings: list[Finding], root: Path) -> list[Finding]:
    """``findings`` with a fingerprint each: a report written before fingerprints, or a trace,
    is fingerprinted here against ``root``."""
    if any(not f.fingerprint for f in findings):
        assign([f for f in findings if not f.fingerprint], root)
    return findings


@dataclass
class Diff:
    new: list[Finding] = field(default_factory=list)
    gone: list[Finding] = field(default_factory=list)
    unchanged: list[Finding] = field(default_factory=list)  # as in NEW (its current line)


def compare(old: list[Finding], new: list[Finding]) -> Diff:
    """Match by fingerprint, as many times as each occurs on each side."""
    out = Diff()
    left = Counter(f.fingerprint for f in old)
    for f in new:
        if left[f.fingerprint] > 0:
            left[f.fingerprint] -= 1
            out.unchanged.append(f)
        else:
            out.new.append(f)
    matched = Counter(f.fingerprint for f in out.unchanged)
    for f in old:
        if matched[f.fingerprint] > 0:
            matched[f.fingerprint] -= 1
        else:
            out.gone.append(f)
    return out


def _line(label: str, f: Finding, root: Path) -> str:
    code = f" [{f.gb_id}]" if f.gb_id else ""
    return (
        f"{label}: {relative(f.path, root)}:{f.line}: {f.severity.value}: "
        f"{f.kind.value}: {f.message.splitlines()[0] if f.message else ''}{code}"
    )


def text(d: Diff, root: Path) -> str:
    key = lambda f: (f.path, f.line, f.column)  # noqa: E731
    out = [_line("new", f, root) for f in sorted(d.new, key=key)]
    out += [_line("gone", f, root) for f in sorted(d.gone, key=key)]
    out += [_line("unchanged", f, root) for f in sorted(d.unchanged, key=key)]
    out.append(f"{len(d.new)} new, {len(d.gone)} gone, {len(d.unchanged)} unchanged")
    return "\n".join(out)


def document(d: Diff) -> dict[str, Any]:
    return {
        "new": to_wire(d.new),
        "gone": to_wire(d.gone),
        "unchanged": to_wire(d.unchanged),
    }
