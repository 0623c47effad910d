"""The daemon's analyses: which file to analyse when, the job that analyses one (or takes its
result from the cache), and the result's way out: published to the file and to every file it
placed findings in, then stored.

Bursts: a request replaces the queued one for its file and cancels the running one, and a
result that a newer request overtook is dropped. So a burst of saves shows the last version,
and at most one earlier analysis (the one the first save of a quiet file starts at once)
finishes before it. No state the file never had is shown: a save is analysed only once the
disk holds what the editor saved.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import ALL_CHECKS
from ..engine.cancel import CancelToken
from ..findings import FileResult, Finding, TargetId, TargetReport
from ..texts.source import content_hash, iter_python_files
from .context import Context
from .documents import DocState, holds, merge_results, shift_findings
from .hints import Hints
from .scheduler import Job, Scheduler

# How long a request waits for a newer one for the same file. Opens come one at a time. A save
# of a quiet file starts at once; the saves of a burst (save all, a formatter) arrive within a
# few milliseconds of each other, and each one after the first cancels the running analysis and
# waits this long for the next. Disk events are already debounced by the watcher; the
# dependants of a disk event wait as long, since several helpers may change together, and those
# of a save as long as a save (a re-check of an importer that the edit cannot reach reuses its
# results without running anything: engine/reuse.py).
DELAY = {"open": 0.0, "save": 0.015, "disk": 0.05, "dependency": 0.05}
# A save whose bytes are not on disk yet (the editor is still writing them) is read again after
# these delays, then analysed as the disk has it; a newer save or disk event wins meanwhile.
_REREAD = (0.05, 0.2, 0.8)


class Analyses:
    def __init__(
        self,
        ctx: Context,
        hints: Hints,
        *,
        on_busy: Callable[[int], None],
        on_error: Callable[[Job, BaseException], None],
    ) -> None:
        self.ctx = ctx
        self.hints = hints
        # Results published but not yet written to the cache: close() lets them land.
        self._unstored = 0
        self._stored = threading.Condition()
        self.scheduler = Scheduler(
            self._analysis_job,
            concurrency=max(1, ctx.config.workers),
            on_change=on_busy,
            on_error=on_error,
        )

    def close(self) -> None:
        self.scheduler.close()
        with self._stored:  # a write takes milliseconds; a reopen then hits the cache
            self._stored.wait_for(lambda: self._unstored == 0, timeout=1.0)

    # -- requests ----------------------------------------------------------------------------
    def wanted_checks(self) -> list[str]:
        return [c for c in self.ctx.config.checks_on_save if c in ALL_CHECKS]

    def request(self, path: str, reason: str, checks: list[str] | None = None) -> None:
        ctx = self.ctx
        doc = ctx.docs.get(path)
        wanted = checks or self.wanted_checks()
        if ctx.engine is None:  # Restricted Mode, or no torch: nothing may or can run
            self.hints.static_only(doc)
            return
        if not ctx.workspace.contains(path):
            # Outside the workspace folders (or a library file): opening it is not consent to
            # run it. Static hints only; the "check file" command runs it on request.
            if reason == "open":
                ctx.log(f"{path}: outside the workspace, static hints only")
            self.hints.static_only(doc)
            return
        delay = DELAY.get(reason)
        if reason == "save" and not self.scheduler.active(path):
            delay = 0.0
        self.scheduler.submit(path, doc.version or 0, wanted, reason, delay=delay)
        if reason in ("save", "disk"):
            # A changed helper re-checks the targets that import it: after a save, as soon as
            # a save would start (the saves of a burst come within milliseconds: the newest
            # request still wins); after a disk event, once the others settle.
            for p in self.dependants(path):
                self.recheck(p, DELAY["save"] if reason == "save" else DELAY["dependency"])

    def recheck(self, path: str, delay: float = DELAY["dependency"]) -> None:
        """``path`` imports a file that changed: analyse it again."""
        self.scheduler.submit(
            path,
            self.ctx.docs.get(path).version or 0,
            self.wanted_checks(),
            "dependency",
            delay=delay,
        )

    def dependants(self, path: str) -> list[str]:
        return [
            d.path
            for d in self.ctx.docs.all()
            if d.result is not None and path in d.result.imports and d.path != path
        ]

    # -- the cache ---------------------------------------------------------------------------
    def cache_key(self, data: bytes, checks: list[str], path: str = "") -> str:
        ctx = self.ctx
        return ctx.cache.key(
            content_hash(data), ctx.torch_version, ctx.config.fingerprint(), checks, path
        )

    def publish_cached(self, doc: DocState) -> bool:
        """Shows the stored result for the file's bytes on disk, if the editor holds them."""
        try:
            data = Path(doc.path).read_bytes()
        except OSError:
            return False
        if doc.text is not None and doc.text.encode() != data:
            return False  # the editor holds unsaved changes: nothing cached applies
        key = self.cache_key(data, self.wanted_checks(), doc.path)
        cached = self.ctx.cache.get(key, doc.path)
        if cached is None:
            return False
        self.ctx.log(f"{doc.path}: cache hit on open")
        self.accept(doc, cached, data, Job(doc.path, doc.version or 0, [], "cache", 0))
        return True

    # -- one analysis ------------------------------------------------------------------------
    def _analysis_job(self, job: Job) -> None:
        """One scheduled analysis: read the file, analyse it (or take the cache's result),
        publish, store; then the slower checks."""
        ctx = self.ctx
        doc = ctx.docs.get(job.path)
        try:
            data = Path(job.path).read_bytes()
        except OSError as exc:
            ctx.log(f"cannot read {job.path}: {exc}")
            return
        if job.reason == "save" and not holds(data, doc.saved_text):
            if job.attempt < len(_REREAD):
                if self.scheduler.retry(job, _REREAD[job.attempt]):
                    ctx.log(f"{job.path}: not yet on disk as saved; reading it again")
                return
            ctx.log(f"{job.path}: the file on disk differs from what the editor saved")
        got = self._analyse(job, data, job.checks)
        if got is None:
            return
        result, key = got
        self._accept_then_store(doc, result, data, job, key)
        # The slower checks (equivalence, timings) follow in the background.
        rest = [c for c in ctx.config.checks if c not in job.checks]
        # Not after a stopped analysis: the slower checks run the same calls, to the same end.
        if rest and result.reports and not result.stopped and not job.token.cancelled:
            more = self._analyse(job, data, rest)
            if more is not None:
                merged = merge_results(result, more[0])
                self._accept_then_store(doc, merged, data, job, more[1], more[0])

    def _analyse(
        self, job: Job, data: bytes, checks: list[str]
    ) -> tuple[FileResult, str | None] | None:
        """(result, its cache key if fresh and still to be stored) for ``checks``; None when
        superseded."""
        ctx = self.ctx
        assert ctx.engine is not None
        key = self.cache_key(data, checks, job.path)
        cached = ctx.cache.get(key, job.path)
        if cached is not None:
            ctx.log(f"{job.path}: cache hit ({', '.join(checks)})")
            return cached, None
        t0 = time.monotonic()
        # Units the edit cannot reach keep their last result (engine/reuse.py).
        result = ctx.engine.analyze_file(Path(job.path), checks, cancel=job.token, reuse=True)
        if result.cancelled or job.token.cancelled:
            ctx.log(f"{job.path}: analysis superseded")
            return None
        try:
            now_hash = content_hash(Path(job.path).read_bytes())
        except OSError:
            now_hash = ""
        if not result.content_hash or {result.content_hash, now_hash} != {content_hash(data)}:
            # The file was rewritten while it was read or run: this result describes no version
            # the user has; the save or watcher event for the new bytes brings the real one.
            ctx.log(f"{job.path}: analysis superseded (the file changed while it was analysed)")
            return None
        if self.scheduler.has_pending(job.path) and job.reason != "command":
            # A newer request came while this ran: its result would be shown only to be replaced.
            ctx.log(f"{job.path}: analysis superseded by a newer request")
            return None
        ctx.log(
            f"{job.path}: {', '.join(checks)} in {time.monotonic() - t0:.2f} s "
            f"({job.reason}, v{job.version})"
        )
        return result, (None if result.interrupted else key)

    def _accept_then_store(
        self,
        doc: DocState,
        shown: FileResult,
        data: bytes,
        job: Job,
        key: str | None,
        stored: FileResult | None = None,
    ) -> None:
        """Publish ``shown``, then cache ``stored`` (default: the same) under ``key``: the user
        does not wait for the atomic write's fsync."""
        with self._stored:
            self._unstored += 1
        try:
            self.accept(doc, shown, data, job)
            if key is not None:
                try:
                    self.ctx.cache.put(key, stored or shown)
                except OSError as exc:
                    self.ctx.log(f"cache write failed: {exc}")
        finally:
            with self._stored:
                self._unstored -= 1
                self._stored.notify_all()

    def accept(self, doc: DocState, result: FileResult, data: bytes, job: Job) -> None:
        """Show ``result``: its findings in ``doc`` (moved to the editor's text), and in each
        other file it placed findings in (a helper that breaks)."""
        if self.scheduler.has_pending(doc.path) and job.reason != "command":
            return  # a newer request for this file is queued: this result is already stale
        docs = self.ctx.docs
        with docs.lock:
            previous = doc.result
            doc.result = result
            doc.analysed_text = data.decode("utf-8", errors="replace")
            findings = [f for f in result.all_findings() if f.path == doc.path]
            if doc.text is not None and doc.text != doc.analysed_text:
                findings = shift_findings(findings, doc.analysed_text, doc.text, doc.path)
            doc.findings = findings
            doc.shown_text = doc.text
            self.hints.reconcile(doc, result)
            others: dict[str, list[Finding]] = {}
            for f in result.all_findings():
                if f.path != doc.path:
                    others.setdefault(f.path, []).append(f)
            touched = set(others)
            if previous is not None:
                touched |= {f.path for f in previous.all_findings() if f.path != doc.path}
            for path in touched:
                other = docs.get(path)
                if others.get(path):
                    other.overlay[doc.path] = others[path]
                else:
                    other.overlay.pop(doc.path, None)
        docs.publish(doc)
        for path in touched:
            docs.publish(docs.get(path))

    # -- on request (commands) ---------------------------------------------------------------
    def check_now(self, path: str) -> FileResult | None:
        ctx = self.ctx
        if not ctx.trusted or ctx.engine is None:
            return None
        doc = ctx.docs.get(path)
        result = ctx.engine.analyze_file(Path(path), ctx.config.checks)
        try:
            data = Path(path).read_bytes()
        except OSError:
            return result
        self.accept(doc, result, data, Job(path, doc.version or 0, ctx.config.checks, "command", 0))
        return result

    def check_workspace(self) -> tuple[int, int]:
        """Every workspace file now: (files that ran, findings)."""
        files = findings = 0
        for p in iter_python_files([self.ctx.root], self.ctx.config.excludes):
            res = self.check_now(str(p))
            if res is not None and res.ran:
                files += 1
                findings += len(res.all_findings())
        return files, findings

    def targets(self, paths: list[str]) -> list[TargetReport]:
        """The targets of ``paths`` (default: the open files), analysing those not yet seen."""
        out: list[TargetReport] = []
        docs = self.ctx.docs
        for p in paths or docs.paths():
            doc = docs.find(p)
            if doc is None or doc.result is None:
                self.check_now(p)
                doc = docs.find(p)
            out += list(doc.result.reports) if doc and doc.result else []
        return out

    def benchmark(
        self,
        path: str,
        target: str,
        *,
        devices: list[str] | None,
        mode: str | None,
        dynamic: bool | None,
        cancel: CancelToken,
        on_progress: Callable[[dict[str, Any]], None],
    ) -> TargetReport | None:
        engine = self.ctx.engine
        if not self.ctx.trusted or engine is None:
            raise PermissionError("benchmarks run user code: trust the workspace first")
        short = TargetId.parse(target).short
        res = engine.analyze_file(
            Path(path),
            ["timings"],
            cancel=cancel,
            on_progress=on_progress,
            devices=devices,
            mode=mode,
            dynamic=dynamic,
            only_target=short,
            extra={"min_run_time": 0.5},
        )
        if res.cancelled:
            return None
        if res.stopped:  # what finished before (a device's timing of several) is not the answer
            raise RuntimeError(next(f.message for f in res.findings if "stopped" in f.data))
        whole = TargetId.parse(target).variant is None  # the unit: its first target
        for r in res.reports:
            if whole or TargetId.parse(r.target).short == short:
                return r
        if res.findings:
            raise RuntimeError(res.findings[0].message)
        raise ValueError(f"no target {target!r} in {path}")
