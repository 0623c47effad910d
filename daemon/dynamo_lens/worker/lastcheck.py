"""The breaks the last check traced in each target, kept for the verification of a rewrite of
it: the check has just traced the original, so the verification need not trace it again (one
of its three traces; the editor's "Verify, then apply" follows a check of the same file).

A kept trace is used only when the original it would stand for is the one traced: every
workspace file the check had imported has the same bytes, no other workspace file is imported
now, torch's compiler settings and the first call's inputs describe the same. Anything else
traces again, so a stale entry costs time, never a wrong verdict.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from ..findings import Finding
from ..texts.locate import Workspace
from . import settings
from .recompiles import describe_call
from .usercode import Call, workspace_modules

# Enough for the files a user has open; the oldest go first.
_KEEP = 32


@dataclass(frozen=True)
class _Traced:
    files: dict[str, str]  # workspace file -> sha1 of its bytes, when traced
    context: str  # torch's settings and the call's inputs, described
    findings: list[Finding]


_LAST: dict[tuple[str, str], _Traced] = {}


def _digest(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return hashlib.sha1(f.read()).hexdigest()
    except OSError:
        return ""


def _context(call: Call) -> str:
    h = hashlib.sha1()
    h.update(settings.fingerprint())
    h.update(describe_call(call).encode())
    return h.hexdigest()


def _files(ws: Workspace) -> dict[str, str]:
    return {os.path.realpath(f): _digest(f) for _, f in workspace_modules(ws)}


def remember(path: str, target: str, call: Call, ws: Workspace, findings: list[Finding]) -> None:
    """Keep what the check of ``target`` (a target of the file ``path``) found, untouched."""
    key = (os.path.realpath(path), target)
    _LAST.pop(key, None)
    while len(_LAST) >= _KEEP:
        _LAST.pop(next(iter(_LAST)))
    _LAST[key] = _Traced(_files(ws), _context(call), list(findings))


def recall(path: str, target: str, call: Call, ws: Workspace) -> list[Finding] | None:
    """What the last check of ``target`` found, if the original now imported is the one it
    traced; else None."""
    kept = _LAST.get((os.path.realpath(path), target))
    if kept is None or kept.context != _context(call):
        return None
    now = {os.path.realpath(f) for _, f in workspace_modules(ws)}
    if not now <= kept.files.keys():
        return None
    if any(_digest(f) != sha for f, sha in kept.files.items()):
        return None
    return list(kept.findings)
