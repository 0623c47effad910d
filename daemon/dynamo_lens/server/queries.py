"""Read-only questions about what the daemon knows: a file's targets, whether a result is
stale, what to show when hovering a line, where a quick fix edits. Nothing here analyses or
publishes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..findings import Finding, TargetId, TargetReport
from ..fixes import quick
from ..texts.source import content_hash, file_hash
from .context import Context
from .lastrun import LastRun


class Queries:
    def __init__(self, ctx: Context, last_run: LastRun) -> None:
        self.ctx = ctx
        self.last_run = last_run

    def reports_for(self, path: str) -> list[TargetReport]:
        doc = self.ctx.docs.find(path)
        return list(doc.result.reports) if doc and doc.result else []

    def is_stale(self, path: str, report: TargetReport | None = None) -> bool:
        docs = self.ctx.docs
        if report is not None and report.kind == "run":
            doc = docs.find(report.path)
            text = doc.text if doc else None
            now = content_hash(text.encode()) if text is not None else file_hash(report.path)
            return self.last_run.changed(report.path, now)
        doc = docs.find(path)
        if doc is None or doc.result is None:
            return False
        current = doc.text.encode() if doc.text is not None else Path(path).read_bytes()
        return content_hash(current) != doc.result.content_hash

    def report_of(self, target: str | None) -> tuple[str, TargetReport] | None:
        """(the file whose results hold it, the report) for a target name, in any file."""
        for doc in self.ctx.docs.all():
            for r in doc.result.reports if doc.result else []:
                if r.target == target:
                    return doc.path, r
        return None

    def hover(self, path: str, line: int) -> tuple[list[Finding], TargetReport | None]:
        """The findings on ``line`` and the report to summarise there: the target defined on
        that line, else the target of the first finding (which may live in another file)."""
        doc = self.ctx.docs.find(path)
        flagged = [f for f in (doc.visible() if doc else []) if f.line <= line <= f.end_line]
        reports = self.reports_for(path) + self.last_run.reports(path)
        report = next((r for r in reports if r.line == line), None)
        if report is None and flagged:
            found = self.report_of(flagged[0].target)
            report = found[1] if found else self.last_run.report(flagged[0].target)
        return flagged, report

    def mark_dynamic_fix(
        self, target: str | None, variable: str, dim: int, buffers: dict[str, str]
    ) -> tuple[str, quick.Edit] | None:
        """The edit that marks ``variable``'s ``dim`` dynamic where the example builds the call
        (the call site the analysis ran). ``buffers``: editor text by path, else the disk's."""
        found = self.report_of(target)
        if found is None:
            return None
        example_file, r = found
        text = buffers.get(example_file)
        if text is None:
            try:
                text = Path(example_file).read_text()
            except OSError:
                return None
        params = [s.split(":", 1)[0] for s in r.input_shapes]
        idx = params.index(variable) if variable in params else 0
        edit = quick.mark_dynamic(text, idx, dim, TargetId.parse(r.target).unit)
        return (example_file, edit) if edit is not None else None

    def environment(self) -> dict[str, Any]:
        engine = self.ctx.engine
        env = engine.environment() if engine is not None else {}
        return {
            "torch": env.get("torch"),
            "devices": env.get("devices", []),
            "python": env.get("python"),
            "backend": self.ctx.config.backend,
            "trusted": self.ctx.trusted,
        }
