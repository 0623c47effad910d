"""Rewrites for the breaks the editor shows, and the worker's verdicts on them, kept by content:
a verdict holds for the bytes of the file it edits and of the target's file it was shown on,
and for nothing else. Knows nothing of LSP."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..engine.cancel import CancelToken
from ..engine.filewrite import WriteError, read_source
from ..engine.importers import importers
from ..engine.partial import STOPPED_WHY
from ..findings import RECOMPILE_SITE, Finding, Kind, Severity, SiteId, TargetId
from ..fixes.catalogue import FIXABLE, Rewrite, applicable, claim, propose
from ..texts.source import content_hash
from .context import Context

_MAX = 256  # verdicts kept; the oldest go first
__all__ = ["Decision", "Proposal", "Verdicts", "applicable", "decide", "failed", "shown"]


@dataclass
class Proposal:
    rewrite: Rewrite
    target: str  # the target that reported the break (a TargetId string)
    site: SiteId  # path, line, gb_type of the break
    verdict: dict[str, Any] | None  # the worker's, for these bytes; None: not verified yet


def _key(rw: Rewrite, target: str, target_path: str) -> tuple[Any, ...] | None:
    try:
        edited = content_hash(Path(rw.path).read_bytes())
        of_target = content_hash(Path(target_path).read_bytes())
    except OSError:
        return None
    return (dataclasses.astuple(rw), target, edited, of_target)


class Verdicts:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._lock = threading.Lock()
        self._known: dict[tuple[Any, ...], dict[str, Any]] = {}

    def target_path(self, target: str) -> str:
        return str(self.ctx.root / TargetId.parse(target).file)

    def proposals(
        self, path: str, text: str, line: int, target: str | None, gb_type: str
    ) -> list[Proposal]:
        """The catalogue's rewrites for a break at ``line`` of ``path`` whose buffer is ``text``;
        none when the buffer is not what is on disk (a verdict is about the saved file)."""
        if not target or not self.ctx.workspace.contains(path):
            return []
        try:
            # Read as Python decodes it, line endings kept: a CRLF buffer equals its file.
            if read_source(path).text != text:
                return []
        except WriteError:
            return []
        kind = Kind.RECOMPILE if gb_type == RECOMPILE_SITE else Kind.GRAPH_BREAK
        f = self._shown(path, line, target, gb_type) or Finding(
            kind, Severity.WARNING, path, line, 0, line, 0, "", target=target
        )
        out = []
        for rw in propose(f, text, True, self.ctx.compile_args):
            key = _key(rw, target, self.target_path(target))
            with self._lock:
                known = self._known.get(key) if key is not None else None
            out.append(Proposal(rw, target, (path, line, gb_type), known))
        return out

    def _stopped(self, targets: list[str]) -> bool:
        """Whether the latest analysis of the targets' file, of its bytes now, was stopped in
        one of them or before any began: verifying would run their calls to the same end."""
        doc = self.ctx.docs.find(self.target_path(targets[0]))
        res = doc.result if doc is not None else None
        if res is None or not res.stopped_targets & {"", *targets}:
            return False
        try:
            return read_source(res.path).digest == res.content_hash
        except WriteError:
            return False

    def _file_targets(self, target: str) -> list[str]:
        """``target`` and the other targets of its file, as its latest analysis found them."""
        doc = self.ctx.docs.find(self.target_path(target))
        others = (
            [r.target for r in doc.result.reports if r.kind != "run"] if doc and doc.result else []
        )
        return [target, *(t for t in others if t != target)]

    def _shown(self, path: str, line: int, target: str, gb_type: str) -> Finding | None:
        """The break as the analysis found it (its hints, its library frame), from the results
        of any open file that holds the target: the rules that read them need it."""
        for doc in self.ctx.docs.all():
            for report in doc.result.reports if doc.result else []:
                if report.target != target:
                    continue
                for f in report.findings:
                    if f.kind in FIXABLE and f.site == (path, line, gb_type):
                        return f
        return None

    def verify(
        self,
        rewrite: Rewrite,
        target: str,
        site: SiteId,
        *,
        cancel: CancelToken,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """The worker's verdict: ``{"verified", "checks"}`` (``cancelled`` when cancelled)."""
        engine = self.ctx.engine
        if not self.ctx.trusted or engine is None:
            raise PermissionError("verifying a fix runs user code: trust the workspace first")
        if not self.ctx.workspace.contains(rewrite.path):
            raise PermissionError(f"not a workspace file: {rewrite.path}")
        key = _key(rewrite, target, self.target_path(target))
        runs = self._file_targets(target) if rewrite.module_wide else [target]
        if self._stopped(runs):
            return {
                "verified": False,
                "checks": [{"name": "runs", "ok": False, "detail": STOPPED_WHY}],
            }
        try:
            src = read_source(rewrite.path)
        except WriteError as exc:
            return {
                "verified": False,
                "checks": [{"name": "runs", "ok": False, "detail": str(exc)}],
            }
        verdict: dict[str, Any] = {"verified": False, "checks": []}
        paths: set[str] = set()
        # A module-wide setting changes every target of the file: each must pass.
        for each in runs:
            out = engine.verify_rewrite(
                self.target_path(each),
                each,
                dataclasses.asdict(rewrite),
                site,
                source=src.text,
                digest=src.digest,
                cancel=cancel,
                on_progress=on_progress,
            )
            if cancel.cancelled:
                return {"verified": False, "checks": [], "cancelled": True}
            if isinstance(out, Finding):
                verdict = {
                    "verified": False,
                    "checks": [{"name": "runs", "ok": False, "detail": out.message}],
                }
            else:
                verdict = {
                    "verified": bool(out.get("verified")),
                    "checks": out.get("checks", []),
                    "inputs": int(out.get("inputs", 0)),
                    "timing": str(out.get("timing") or ""),
                }
                paths.add(str(out.get("paths", "")))
            if not verdict["verified"]:
                break
        # Over several targets, the weakest claim holds.
        verdict["paths"] = "example" if "example" in paths else ("both" if "both" in paths else "")
        # A helper module's edit, or a boundary moved: other files that import it run it too,
        # unverified.
        elsewhere = os.path.realpath(rewrite.path) != os.path.realpath(self.target_path(target))
        if verdict["verified"] and (elsewhere or rewrite.moves_boundary):
            verdict["shared"] = importers(
                engine.root,
                engine.config.excludes,
                rewrite.path,
                (rewrite.start, rewrite.end),
                skip=self.target_path(target),
            )
        # Kept only if the files did not change while it ran.
        if key is not None and key == _key(rewrite, target, self.target_path(target)):
            with self._lock:
                self._known[key] = verdict
                while len(self._known) > _MAX:
                    self._known.pop(next(iter(self._known)))
        return verdict


@dataclass
class Decision:
    """What the editor does with a verdict on the user's request to verify, then apply: the
    verdict as answered, the rewrite to apply to the buffer it was proposed for (None: not
    applied), and what the user is told ("" where the edit itself says it)."""

    result: dict[str, Any]
    apply: Rewrite | None
    say: str
    progress: str  # how the request's progress ends


def decide(p: Proposal, verdict: dict[str, Any], still_current: Callable[[], bool]) -> Decision:
    """Apply only a verified rewrite that holds for every path and every target, and only
    while the buffer is the one it was proposed and verified for (``still_current``, asked
    last): verified, but the file changed, it is not applied."""
    title = p.rewrite.title
    result: dict[str, Any] = {**verdict, "rule": p.rewrite.rule, "applied": False}
    if verdict.get("cancelled"):
        return Decision(result, None, "", "cancelled")
    if not verdict.get("verified"):
        return Decision(result, None, f"{title}: not applied, {failed(verdict)}", "rejected")
    if not applicable(verdict):
        # Equal on the example only: offered as an explicit, labelled choice, never applied.
        return Decision(result, None, f"{title}: {shown(verdict)}: not applied", "verified")
    if not still_current():
        return Decision(
            result, None, f"{title}: verified, but the file changed: not applied", "verified"
        )
    return Decision(result, p.rewrite, "", "verified")


def shown(verdict: dict[str, Any]) -> str:
    """What a verified verdict showed, for a title: "equivalent", or "equal on 3 inputs
    covering both paths" (the checks it passed are in the verdict), and for a helper module
    other files import, that their targets were not run."""
    said = claim(
        str(verdict.get("paths", "")),
        int(verdict.get("inputs", 0)),
        str(verdict.get("timing") or ""),
    )
    if verdict.get("shared"):
        said += f"; for this target only: {', '.join(verdict['shared'][:2])} import it too"
    return said


def failed(verdict: dict[str, Any]) -> str:
    for c in verdict.get("checks", []):
        if not c.get("ok"):
            return f"{c['name']} failed" + (f": {c['detail']}" if c.get("detail") else "")
    return ""
