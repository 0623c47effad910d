"""The last run in the editor: a command run from it ("Run File with Analysis") or a trace
loaded, its findings shown beside the editor's own and kept in the cache folder across
restarts until cleared or replaced.

A file that changed since the run keeps its run findings, marked stale: they describe the code
as it ran, which is still worth seeing, but not as current as a fresh analysis.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..engine.source import content_hash, file_hash
from ..findings import Finding, FindingData, TargetReport
from ..runs.command import TracedRun, trace_results
from ..runs.loaded import LoadedRun
from .context import Context
from .documents import DocState, mark_stale


class LastRun:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._lock = threading.Lock()
        self.run: LoadedRun | None = ctx.cache.get_run()

    # -- what the run says ------------------------------------------------------------------
    def paths(self) -> set[str]:
        run = self.run
        return {r.path for r in run.results} if run else set()

    def changed(self, path: str, current_hash: str | None) -> bool:
        """Whether ``path`` differs from the file the run saw."""
        run = self.run
        for r in run.results if run else []:
            if r.path == path:
                return bool(r.content_hash) and current_hash != r.content_hash
        return False

    def findings(self, path: str, current_hash: str | None) -> list[Finding]:
        run = self.run
        out: list[Finding] = []
        for r in run.results if run else []:
            if r.path == path:
                out = [replace(f, data=FindingData(**f.data)) for f in r.all_findings()]
        if out and self.changed(path, current_hash):
            out = mark_stale(out)
        return out

    def reports(self, path: str) -> list[TargetReport]:
        run = self.run
        return [rep for r in run.results if r.path == path for rep in r.reports] if run else []

    def report(self, target: str | None) -> TargetReport | None:
        run = self.run
        for r in run.results if run else []:
            for rep in r.reports:
                if rep.target == target:
                    return rep
        return None

    # -- showing it -------------------------------------------------------------------------
    def _replace(self, run: LoadedRun | None) -> set[str]:
        """Show ``run`` instead of the last one (None: clear); the files whose findings
        change. Stored first, so a restart shows the same."""
        with self._lock:
            before = self.paths()
            if run is None:
                self.ctx.cache.clear_run()
            else:
                try:
                    self.ctx.cache.put_run(run)
                except OSError:
                    pass  # shown all the same; only the restart loses it
            self.run = run
            return before | self.paths()

    def show(self, paths: set[str]) -> None:
        """Publish ``paths`` with the last run's findings as they stand now."""
        docs = self.ctx.docs
        for path in paths:
            with docs.lock:
                doc = docs.get(path)
                text = doc.text
                now = _hash(text) if text is not None else file_hash(path)
                found = self.findings(path, now)
                if found:
                    doc.overlay["run"] = found
                else:
                    doc.overlay.pop("run", None)
            docs.publish(doc)

    def outdated(self, doc: DocState, now: str | None) -> None:
        """The file changed on disk since the run: its run findings stay, marked stale."""
        with self.ctx.docs.lock:
            shown = doc.overlay.get("run")
            if not shown or not self.changed(doc.path, now):
                return
            if all(f.data.get("stale") for f in shown):
                return
            doc.overlay["run"] = mark_stale(shown)
        self.ctx.docs.publish(doc)

    def on_open(self, doc: DocState, text: str) -> None:
        """A file opened (again) after the run was loaded gets its run findings back."""
        if "run" not in doc.overlay and (found := self.findings(doc.path, _hash(text))):
            doc.overlay["run"] = found

    # -- loading, running, clearing -----------------------------------------------------------
    def load(
        self,
        paths: list[Path],
        provenance: str,
        exit_code: int | None = None,
        cancelled: bool = False,
    ) -> dict[str, Any]:
        """A run's trace, read (no user code runs: allowed in Restricted Mode): its findings
        replace the previous run's, beside the editor's own, and are kept across restarts."""
        run = trace_results(paths, self.ctx.root, [], provenance)
        run = replace(run, exit_code=exit_code, cancelled=cancelled)
        self.show(self._replace(run))
        return {
            "files": len(run.results),
            "findings": sum(len(r.findings) for r in run.results),
            "records": run.records,
            "skipped": run.skipped,
        }

    def argv(self, path: str | None, command: str | None) -> list[str]:
        """What "Run File with Analysis" runs: ``command`` (``dynamoLens.runCommand``, with
        ``${file}`` for the file), else the file with the worker's interpreter. A leading
        ``python`` is that interpreter too: the one the user chose for this workspace."""
        python = self.ctx.python or sys.executable
        if command and command.strip():
            argv = [a.replace("${file}", path or "") for a in shlex.split(command)]
            if argv[0] in ("python", "python3"):
                argv[0] = python
            return argv
        if not path:
            raise ValueError("no file to run: open a Python file or set dynamoLens.runCommand")
        return [python, path]

    def start(self, argv: list[str], on_line: Callable[[str], None]) -> TracedRun:
        if not self.ctx.trusted:
            raise PermissionError("running a command runs your code: trust the workspace first")
        return TracedRun(argv, self.ctx.root, on_line=on_line)

    def finish(self, run: TracedRun, code: int) -> dict[str, Any]:
        """Whatever the command got through before it failed or was cancelled is shown."""
        how = ", cancelled" if run.cancelled else f", exit code {code}" if code else ""
        try:
            out = self.load([run.trace_dir], run.provenance + how, code, run.cancelled)
        finally:
            shutil.rmtree(run.trace_dir, ignore_errors=True)
        return {**out, "exitCode": code, "cancelled": run.cancelled}

    def clear(self) -> int:
        paths = self._replace(None)
        self.show(paths)
        return len(paths)


def _hash(text: str) -> str:
    return content_hash(text.encode())
