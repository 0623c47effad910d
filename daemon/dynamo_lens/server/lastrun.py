"""The last run's findings as the editor shows them: one run (a command run from the editor,
or a trace loaded), kept in the cache folder across restarts until cleared or replaced.

A file that changed since the run keeps its run findings, marked stale: they describe the code
as it ran, which is still worth seeing, but not as current as a fresh analysis.
"""

from __future__ import annotations

import threading
from dataclasses import replace

from ..findings import Finding, FindingData, TargetReport
from ..runs.loaded import LoadedRun
from .cache import ResultCache


class LastRun:
    def __init__(self, cache: ResultCache) -> None:
        self._cache = cache
        self._lock = threading.Lock()
        self.run: LoadedRun | None = cache.get_run()

    def paths(self) -> set[str]:
        run = self.run
        return {r.path for r in run.results} if run else set()

    def replace(self, run: LoadedRun | None) -> set[str]:
        """Show ``run`` instead of the last one (None: clear); the files whose findings
        change. Stored first, so a restart shows the same."""
        with self._lock:
            before = self.paths()
            if run is None:
                self._cache.clear_run()
            else:
                try:
                    self._cache.put_run(run)
                except OSError:
                    pass  # shown all the same; only the restart loses it
            self.run = run
            return before | self.paths()

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


def mark_stale(findings: list[Finding]) -> list[Finding]:
    out = []
    for f in findings:
        data = FindingData(**f.data)
        data["stale"] = True
        out.append(replace(f, data=data))
    return out
