"""The daemon's analysis service: documents, schedule, cache, results. No LSP types here.

The LSP edge (``lsp/server.py``) calls ``open``/``save``/``change``/``close`` and renders what
``publish`` hands back; everything about *when* to analyse and *what is current* lives here.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..config import ALL_CHECKS, EXAMPLE_DEF, Config
from ..engine.analysis import Engine
from ..engine.cancel import CancelToken
from ..engine.source import (
    content_hash,
    decode_source,
    file_hash,
    iter_python_files,
    syntax_error,
)
from ..findings import FileResult, Finding, Kind, Severity, TargetId, TargetReport
from ..runs.command import TracedRun, trace_results
from ..runs.loaded import LoadedRun
from ..static import Reconciler, analyze_source, reachable_functions
from ..texts.locate import Workspace
from . import fixes
from .cache import ResultCache, default_directory
from .debounce import Debouncer
from .documents import DocState, holds, merge_results, shift_findings
from .lastrun import LastRun, mark_stale
from .scheduler import Job, Scheduler

# How long a request waits for a newer one for the same file. Opens come one at a time. A save
# of a quiet file starts at once; the saves of a burst (save all, a formatter) arrive within a
# few milliseconds of each other, and each one after the first cancels the running analysis and
# waits this long for the next. Disk events are already debounced by the watcher; dependants
# wait longest since several helpers may change together.
_DELAY = {"open": 0.0, "save": 0.015, "disk": 0.05, "dependency": 0.3}
# A save whose bytes are not on disk yet (the editor is still writing them) is read again after
# these delays, then analysed as the disk has it; a newer save or disk event wins meanwhile.
_REREAD = (0.05, 0.2, 0.8)

PublishFn = Callable[[str, list[Finding], int | None], None]
StatusFn = Callable[[dict[str, Any]], None]
LogFn = Callable[[str], None]


def _torch_version() -> str:
    import importlib.metadata  # only here: it costs start-up time

    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "none"


# Model files are kilobytes; a generated or data file of megabytes is not one.
MAX_FILE_BYTES = 1_000_000


def _hash(text: str) -> str:
    return content_hash(text.encode())


def _disk_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


class AnalysisService:
    def __init__(
        self,
        root: Path,
        config: Config,
        *,
        trusted: bool,
        publish: PublishFn,
        status: StatusFn,
        log: LogFn,
        python: str | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.config = config
        self.trusted = trusted
        self._publish = publish
        self._status = status
        self._log = log
        self._python = python
        self.cache = ResultCache(cache_dir or default_directory(self.root), self.root)
        self.last_run = LastRun(self.cache)
        self.torch_version = _torch_version()
        self.docs: dict[str, DocState] = {}
        self.reconciler = Reconciler()
        self._debouncer = Debouncer("static-hints")
        self._lock = threading.RLock()
        self.engine: Engine | None = None
        self.environment: dict[str, Any] = {}
        self.last_error = ""
        self.workspace = Workspace(Path(root), config.excludes)
        # Results published but not yet written to the cache: close() lets them land.
        self._unstored = 0
        self._stored = threading.Condition()
        self.scheduler = Scheduler(
            self._analysis_job,
            concurrency=max(1, config.workers),
            on_change=self._busy,
            on_error=self._job_failed,
        )

    def _job_failed(self, job: Job, exc: BaseException) -> None:
        self.last_error = f"analysis of {Path(job.path).name} failed: {type(exc).__name__}: {exc}"
        self._log(self.last_error)
        self._emit("error", self.last_error)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        # The last run's findings come back with the daemon (a restart, a new session).
        self._show_run(self.last_run.paths())
        if not self.trusted:
            self._emit(
                "restricted",
                "Restricted Mode: no user code runs; trust the workspace "
                "for graph breaks, recompiles and timings.",
            )
            return
        if self.torch_version == "none" and self._python is None:
            self.last_error = (
                f"torch is not installed for {sys.executable}: static hints only; install "
                "torch in this interpreter (or choose another) for dynamic analysis"
            )
            self._emit("ready", self.last_error)
            return
        self.engine = Engine(
            self.root,
            self.config,
            python=self._python,
            on_log=self._log,
        )
        self._emit("warming", "starting the worker (importing torch)")
        self.engine.start()

        def warm() -> None:
            assert self.engine is not None
            try:
                self.environment = self.engine.environment()
                self.torch_version = str(self.environment.get("torch", self.torch_version))
                # Jobs may have queued while torch was importing: "ready" only when idle.
                n = self.scheduler.count()
                if n:
                    self._emit("busy", f"{n} analysis job(s)")
                else:
                    self._emit("ready", "")
            except Exception as exc:
                self.last_error = f"worker failed to start: {exc}"
                self._emit("error", self.last_error)

        threading.Thread(target=warm, name="warmup", daemon=True).start()

    def close(self) -> None:
        self._debouncer.close()
        self.scheduler.close()
        with self._stored:  # a write takes milliseconds; a reopen then hits the cache
            self._stored.wait_for(lambda: self._unstored == 0, timeout=1.0)
        if self.engine is not None:
            self.engine.close()

    def _emit(self, state: str, message: str) -> None:
        self._status(
            {
                "state": state,
                "torch": self.environment.get("torch")
                or (self.torch_version if self.torch_version != "none" else None),
                "devices": self.environment.get("devices", []),
                "jobs": self.scheduler.count() if hasattr(self, "scheduler") else 0,
                "message": message,
            }
        )

    def _busy(self, n: int) -> None:
        if not self.trusted:
            return
        if n:
            self._emit("busy", f"{n} analysis job(s)")
        elif self.environment:
            self._emit("ready", self.last_error)

    # -- documents ---------------------------------------------------------------------------
    def _doc(self, path: str) -> DocState:
        with self._lock:
            return self.docs.setdefault(path, DocState(path))

    def _too_big(self, doc: DocState) -> bool:
        """A file past the size limit gets one information diagnostic and nothing else: no
        static pass, no diff shifting, no analysis (a 5 MB buffer froze the loop for 29 s)."""
        size = len(doc.text) if doc.text is not None else _disk_size(doc.path)
        if size <= MAX_FILE_BYTES:
            return False
        note = Finding(
            Kind.SKIPPED,
            Severity.INFORMATION,
            doc.path,
            1,
            1,
            1,
            2,
            f"Dynamo Lens skipped this file: {size / 1e6:.1f} MB is over its "
            f"{MAX_FILE_BYTES / 1e6:.0f} MB limit for model files",
        )
        already = [h.message for h in doc.hints] == [note.message] and not doc.findings
        doc.findings, doc.overlay, doc.hints = [], {}, [note]
        if not already:  # every keystroke in a skipped file need not publish the same note
            self._publish(doc.path, doc.visible(), doc.version)
        return True

    def open(self, path: str, text: str, version: int | None) -> None:
        doc = self._doc(path)
        doc.text, doc.version = text, version
        if self._too_big(doc):
            return
        doc.shown_text = text
        if "run" not in doc.overlay and (run := self.last_run.findings(path, _hash(text))):
            doc.overlay["run"] = run  # closed (and forgotten) since the run was loaded
        # Hints come from a pass off the event loop: a big file must not hold up requests.
        self._static_later(doc, 0.0)
        if self.engine is not None and self._publish_cached(doc):
            # Known result for this exact content: shown at once; slower checks may follow.
            rest = [c for c in self.config.checks if c not in self._wanted_checks()]
            if rest:
                self._request(path, "open")
            return
        self._request(path, "open")

    def _publish_cached(self, doc: DocState) -> bool:
        try:
            data = Path(doc.path).read_bytes()
        except OSError:
            return False
        if doc.text is not None and doc.text.encode() != data:
            return False  # the editor holds unsaved changes: nothing cached applies
        key = self.cache_key(data, self._wanted_checks(), doc.path)
        cached = self.cache.get(key, doc.path)
        if cached is None:
            return False
        self._log(f"{doc.path}: cache hit on open")
        self._accept(doc, cached, data, Job(doc.path, doc.version or 0, [], "cache", 0))
        return True

    def _static(self, doc: DocState, text: str | None = None) -> None:
        """Instant hints from the source alone (no user code runs), for ``text`` (default:
        the editor's text now)."""
        if text is None:
            text = doc.text
        if text is None:
            try:
                text = Path(doc.path).read_text()
            except (OSError, UnicodeDecodeError):
                return
        hints = self.reconciler.visible(doc.path, text, analyze_source(text, doc.path))
        if not self.trusted:
            hints = [replace(h, note="dynamic analysis needs a trusted workspace") for h in hints]
        elif self.torch_version == "none":
            note = "dynamic analysis needs torch in this interpreter"
            hints = [replace(h, note=note) for h in hints]
        doc.hints = hints

    def _static_later(self, doc: DocState, delay: float = 0.1) -> None:
        """The edit pass, on the debouncer's thread: move the shown findings to where their
        lines went, recompute hints, publish. A pass that a newer edit overtook publishes
        nothing (the newer edit's pass follows); a burst of edits is one pass."""

        def fire() -> None:
            with self._lock:
                new = doc.text
                old = doc.shown_text
                if new is not None and old is not None and old != new:
                    doc.findings = shift_findings(doc.findings, old, new, doc.path)
                    doc.overlay = {
                        k: shift_findings(v, old, new, doc.path) for k, v in doc.overlay.items()
                    }
                    doc.hints = shift_findings(doc.hints, old, new, doc.path)
                doc.shown_text = new
            self._static(doc, new)
            if doc.text is not new:
                return
            self._publish(doc.path, doc.visible(), doc.version)

        self._debouncer.call(doc.path, delay, fire)

    def save(self, path: str, text: str | None, version: int | None) -> None:
        doc = self._doc(path)
        if text is not None:
            doc.text = text
        doc.version = version
        if self._too_big(doc):
            return
        doc.saved_text = doc.text
        try:
            data: bytes | None = Path(path).read_bytes()
        except OSError:
            data = None
        if data is not None and holds(data, doc.saved_text):
            doc.saved_hash = content_hash(data)
        elif doc.saved_text is not None:  # still being written: the bytes it will hold
            doc.saved_hash = content_hash(doc.saved_text.encode())
        else:
            doc.saved_hash = None
        self._run_outdated(doc, doc.saved_hash)
        # The static pass waits: a save's analysis starts first, and a burst of saves is handled
        # in milliseconds (the text's hints are already there from didChange).
        self._static_later(doc, 0.0)
        self._request(path, "save")

    def change(self, path: str, text: str, version: int | None) -> None:
        doc = self._doc(path)
        with self._lock:
            if doc.shown_text is None:
                doc.shown_text = doc.text
            doc.text, doc.version = text, version
        if self._too_big(doc):
            return
        self._static_later(doc)

    def close_doc(self, path: str) -> None:
        self.scheduler.cancel(path)
        if not self.config.keep_diagnostics_on_close:
            with self._lock:
                doc = self.docs.pop(path, None)
            if doc is not None:
                self._publish(path, [], None)

    def disk_changed(self, path: str) -> None:
        """A file changed outside the editor (git checkout, codegen): re-check it and every
        analysed file that imports it. The editor's own saves also reach the watcher: those
        bytes are already being analysed."""
        doc = self.docs.get(path)
        if path in self.last_run.paths():
            self._run_outdated(self._doc(path), file_hash(path))
        if doc is None or (doc.text is None and doc.result is None):
            # Never opened or analysed (at most a run's findings shown in it): run it only
            # when it declares a target. A file that
            # declares nothing would be imported just to guess, and importing runs its
            # module-level code; its dependants are re-checked all the same.
            try:
                data = Path(path).read_bytes()
            except OSError:
                return
            if not EXAMPLE_DEF.search(data):
                for p in self._dependants(path):
                    d = self._doc(p)
                    self.scheduler.submit(
                        p,
                        d.version or 0,
                        self._wanted_checks(),
                        "dependency",
                        delay=_DELAY["dependency"],
                    )
                return
        else:
            try:
                now = content_hash(Path(path).read_bytes())
            except OSError:
                return
            known = {doc.saved_hash, doc.result.content_hash if doc.result else None}
            if now in known:
                return
        self._request(path, "disk")

    def _dependants(self, path: str) -> list[str]:
        with self._lock:
            return [
                d.path
                for d in self.docs.values()
                if d.result is not None and path in d.result.imports and d.path != path
            ]

    def _request(self, path: str, reason: str, checks: list[str] | None = None) -> None:
        doc = self._doc(path)
        wanted = checks or self._wanted_checks()
        if self.engine is None:  # Restricted Mode, or no torch: nothing may or can run
            self._publish_static_only(doc)
            return
        if not self.workspace.contains(path):
            # Outside the workspace folders (or a library file): opening it is not consent to
            # run it. Static hints only; the "check file" command runs it on request.
            if reason == "open":
                self._log(f"{path}: outside the workspace, static hints only")
            self._publish_static_only(doc)
            return
        delay = _DELAY.get(reason)
        if reason == "save" and not self.scheduler.active(path):
            delay = 0.0
        self.scheduler.submit(path, doc.version or 0, wanted, reason, delay=delay)
        if reason in ("save", "disk"):
            # A changed helper re-checks the targets that import it.
            for p in self._dependants(path):
                self.scheduler.submit(
                    p, self._doc(p).version or 0, wanted, "dependency", delay=_DELAY["dependency"]
                )

    def _wanted_checks(self) -> list[str]:
        return [c for c in self.config.checks_on_save if c in ALL_CHECKS]

    def _publish_static_only(self, doc: DocState) -> None:
        # No user code in Restricted Mode; static checks (bytes, syntax) still apply.
        data = (doc.text or "").encode() if doc.text is not None else Path(doc.path).read_bytes()
        text, bad = decode_source(doc.path, data)
        if bad is None and text is not None:
            bad = syntax_error(doc.path, text)
        doc.findings = [bad] if bad else []
        self._static(doc)
        self._publish(doc.path, doc.visible(), doc.version)

    # -- analysis ----------------------------------------------------------------------------
    def cache_key(self, data: bytes, checks: list[str], path: str = "") -> str:
        return self.cache.key(
            content_hash(data), self.torch_version, self.config.fingerprint(), checks, path
        )

    def _analyse(
        self, job: Job, data: bytes, checks: list[str]
    ) -> tuple[FileResult, str | None] | None:
        """(result, its cache key if fresh and still to be stored) for ``checks``; None when
        superseded."""
        assert self.engine is not None
        key = self.cache_key(data, checks, job.path)
        cached = self.cache.get(key, job.path)
        if cached is not None:
            self._log(f"{job.path}: cache hit ({', '.join(checks)})")
            return cached, None
        t0 = time.monotonic()
        result = self.engine.analyze_file(Path(job.path), checks, cancel=job.token)
        if result.cancelled or job.token.cancelled:
            self._log(f"{job.path}: analysis superseded")
            return None
        try:
            now_hash = content_hash(Path(job.path).read_bytes())
        except OSError:
            now_hash = ""
        if not result.content_hash or {result.content_hash, now_hash} != {content_hash(data)}:
            # The file was rewritten while it was read or run: this result describes no version
            # the user has; the save or watcher event for the new bytes brings the real one.
            self._log(f"{job.path}: analysis superseded (the file changed while it was analysed)")
            return None
        if self.scheduler.has_pending(job.path) and job.reason != "command":
            # A newer request came while this ran: its result would be shown only to be replaced.
            self._log(f"{job.path}: analysis superseded by a newer request")
            return None
        self._log(
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
            self._accept(doc, shown, data, job)
            if key is not None:
                try:
                    self.cache.put(key, stored or shown)
                except OSError as exc:
                    self._log(f"cache write failed: {exc}")
        finally:
            with self._stored:
                self._unstored -= 1
                self._stored.notify_all()

    def _analysis_job(self, job: Job) -> None:
        """One scheduled analysis: read the file, analyse it (or take the cache's result),
        publish, store; then the slower checks."""
        doc = self._doc(job.path)
        try:
            data = Path(job.path).read_bytes()
        except OSError as exc:
            self._log(f"cannot read {job.path}: {exc}")
            return
        if job.reason == "save" and not holds(data, doc.saved_text):
            if job.attempt < len(_REREAD):
                if self.scheduler.retry(job, _REREAD[job.attempt]):
                    self._log(f"{job.path}: not yet on disk as saved; reading it again")
                return
            self._log(f"{job.path}: the file on disk differs from what the editor saved")
        got = self._analyse(job, data, job.checks)
        if got is None:
            return
        result, key = got
        self._accept_then_store(doc, result, data, job, key)
        # The slower checks (equivalence, timings) follow in the background.
        rest = [c for c in self.config.checks if c not in job.checks]
        if rest and result.reports and not job.token.cancelled:
            more = self._analyse(job, data, rest)
            if more is not None:
                merged = merge_results(result, more[0])
                self._accept_then_store(doc, merged, data, job, more[1], more[0])

    def _accept(self, doc: DocState, result: FileResult, data: bytes, job: Job) -> None:
        if self.scheduler.has_pending(doc.path) and job.reason != "command":
            return  # a newer request for this file is queued: this result is already stale
        with self._lock:
            previous = doc.result
            doc.result = result
            doc.analysed_text = data.decode("utf-8", errors="replace")
            findings = [f for f in result.all_findings() if f.path == doc.path]
            if doc.text is not None and doc.text != doc.analysed_text:
                findings = shift_findings(findings, doc.analysed_text, doc.text, doc.path)
            doc.findings = findings
            doc.shown_text = doc.text
            self._reconcile(doc, result)
            # Findings in other files (a break inside an imported helper) go to those files.
            others: dict[str, list[Finding]] = {}
            for f in result.all_findings():
                if f.path != doc.path:
                    others.setdefault(f.path, []).append(f)
            touched = set(others)
            if previous is not None:
                touched |= {f.path for f in previous.all_findings() if f.path != doc.path}
            for path in touched:
                other = self._doc(path)
                if others.get(path):
                    other.overlay[doc.path] = others[path]
                else:
                    other.overlay.pop(doc.path, None)
        self._publish(doc.path, doc.visible(), doc.version)
        for path in touched:
            other = self._doc(path)
            self._publish(path, other.visible(), other.version)

    def _reconcile(self, doc: DocState, result: FileResult) -> None:
        """A dynamic run confirms the hints it found and refutes the rest of what it covered."""
        text = doc.analysed_text or ""
        errors = any(f.kind.value == "error" for f in result.all_findings())
        covered: set[str] | None = None
        if result.reports and not errors:
            covered = set().union(*reachable_functions(text, doc.path).values())
        self.reconciler.update_dynamic(doc.path, text, result.all_findings(), covered)
        self._static(doc)

    # -- queries and commands ----------------------------------------------------------------
    def reports_for(self, path: str) -> list[TargetReport]:
        doc = self.docs.get(path)
        return list(doc.result.reports) if doc and doc.result else []

    def is_stale(self, path: str, report: TargetReport | None = None) -> bool:
        if report is not None and report.kind == "run":
            doc = self.docs.get(report.path)
            text = doc.text if doc else None
            now = _hash(text) if text is not None else file_hash(report.path)
            return self.last_run.changed(report.path, now)
        doc = self.docs.get(path)
        if doc is None or doc.result is None:
            return False
        current = doc.text.encode() if doc.text is not None else Path(path).read_bytes()
        return content_hash(current) != doc.result.content_hash

    def check_now(self, path: str) -> FileResult | None:
        if not self.trusted or self.engine is None:
            return None
        doc = self._doc(path)
        result = self.engine.analyze_file(Path(path), self.config.checks)
        try:
            data = Path(path).read_bytes()
        except OSError:
            return result
        self._accept(
            doc, result, data, Job(path, doc.version or 0, self.config.checks, "command", 0)
        )
        return result

    def workspace_files(self) -> list[Path]:
        return list(iter_python_files([self.root], self.config.excludes))

    def check_workspace(self) -> tuple[int, int]:
        """Every workspace file now: (files that ran, findings)."""
        files = findings = 0
        for p in self.workspace_files():
            res = self.check_now(str(p))
            if res is not None and res.ran:
                files += 1
                findings += len(res.all_findings())
        return files, findings

    def targets(self, paths: list[str]) -> list[TargetReport]:
        """The targets of ``paths`` (default: the open files), analysing those not yet seen."""
        out: list[TargetReport] = []
        for p in paths or list(self.docs):
            if p not in self.docs or self.docs[p].result is None:
                self.check_now(p)
            out += self.reports_for(p)
        return out

    def _report_of(self, target: str | None) -> tuple[str, TargetReport] | None:
        """(the file whose results hold it, the report) for a target name, in any file."""
        with self._lock:
            for doc in self.docs.values():
                for r in doc.result.reports if doc.result else []:
                    if r.target == target:
                        return doc.path, r
        return None

    def hover(self, path: str, line: int) -> tuple[list[Finding], TargetReport | None]:
        """The findings on ``line`` and the report to summarise there: the target defined on
        that line, else the target of the first finding (which may live in another file)."""
        doc = self.docs.get(path)
        flagged = [f for f in (doc.visible() if doc else []) if f.line <= line <= f.end_line]
        reports = self.reports_for(path) + self.last_run.reports(path)
        report = next((r for r in reports if r.line == line), None)
        if report is None and flagged:
            found = self._report_of(flagged[0].target)
            report = found[1] if found else self.last_run.report(flagged[0].target)
        return flagged, report

    def mark_dynamic_fix(
        self, target: str | None, variable: str, dim: int, buffers: dict[str, str]
    ) -> tuple[str, fixes.Edit] | None:
        """The edit that marks ``variable``'s ``dim`` dynamic where the example builds the call
        (the call site the analysis ran). ``buffers``: editor text by path, else the disk's."""
        found = self._report_of(target)
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
        edit = fixes.mark_dynamic(text, idx, dim, TargetId.parse(r.target).unit)
        return (example_file, edit) if edit is not None else None

    def environment_summary(self) -> dict[str, Any]:
        env = self.engine.environment() if self.engine is not None else {}
        return {
            "torch": env.get("torch"),
            "devices": env.get("devices", []),
            "python": env.get("python"),
            "backend": self.config.backend,
            "trusted": self.trusted,
        }

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
        if not self.trusted or self.engine is None:
            raise PermissionError("benchmarks run user code: trust the workspace first")
        short = TargetId.parse(target).short
        res = self.engine.analyze_file(
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
        for r in res.reports:
            return r
        if res.findings:
            raise RuntimeError(res.findings[0].message)
        raise ValueError(f"no target {target!r} in {path}")

    def clear_cache(self) -> int:
        return self.cache.clear()

    def load_run(
        self,
        paths: list[Path],
        provenance: str,
        exit_code: int | None = None,
        cancelled: bool = False,
    ) -> dict[str, Any]:
        """A run's trace, read (no user code runs: allowed in Restricted Mode): its findings
        replace the previous run's, beside the editor's own, and are kept across restarts."""
        results, stats, reader = trace_results(paths, self.root, [], provenance)
        run = LoadedRun(
            provenance=provenance,
            loaded_at=time.time(),
            results=results,
            summary=reader.summary(),
            exit_code=exit_code,
            cancelled=cancelled,
            torch=reader.torch_version,
            dynamo_seconds=reader.dynamo_seconds,
            inductor_seconds=reader.inductor_seconds,
            frames_compiled=reader.frames_compiled,
            records=stats.records,
            skipped=stats.skipped_count,
        )
        self._show_run(self.last_run.replace(run))
        return {
            "files": len(results),
            "findings": sum(len(r.findings) for r in results),
            "records": stats.records,
            "skipped": stats.skipped_count,
        }

    def run_argv(self, path: str | None, command: str | None) -> list[str]:
        """What "Run File with Analysis" runs: ``command`` (``dynamoLens.runCommand``, with
        ``${file}`` for the file), else the file with the worker's interpreter. A leading
        ``python`` is that interpreter too: the one the user chose for this workspace."""
        python = self._python or sys.executable
        if command and command.strip():
            argv = [a.replace("${file}", path or "") for a in shlex.split(command)]
            if argv[0] in ("python", "python3"):
                argv[0] = python
            return argv
        if not path:
            raise ValueError("no file to run: open a Python file or set dynamoLens.runCommand")
        return [python, path]

    def start_run(self, argv: list[str], on_line: Callable[[str], None]) -> TracedRun:
        if not self.trusted:
            raise PermissionError("running a command runs your code: trust the workspace first")
        return TracedRun(argv, self.root, on_line=on_line)

    def finish_run(self, run: TracedRun, code: int) -> dict[str, Any]:
        """Whatever the command got through before it failed or was cancelled is shown."""
        how = ", cancelled" if run.cancelled else f", exit code {code}" if code else ""
        try:
            out = self.load_run([run.trace_dir], run.provenance + how, code, run.cancelled)
        finally:
            shutil.rmtree(run.trace_dir, ignore_errors=True)
        return {**out, "exitCode": code, "cancelled": run.cancelled}

    def clear_run(self) -> int:
        paths = self.last_run.replace(None)
        self._show_run(paths)
        return len(paths)

    def _show_run(self, paths: set[str]) -> None:
        """Publish ``paths`` with the last run's findings as they stand now."""
        for path in paths:
            with self._lock:
                doc = self._doc(path)
                text = doc.text
                now = _hash(text) if text is not None else file_hash(path)
                found = self.last_run.findings(path, now)
                if found:
                    doc.overlay["run"] = found
                else:
                    doc.overlay.pop("run", None)
            self._publish(path, doc.visible(), doc.version)

    def _run_outdated(self, doc: DocState, now: str | None) -> None:
        """The file changed on disk since the run: its run findings stay, marked stale."""
        with self._lock:
            shown = doc.overlay.get("run")
            if not shown or not self.last_run.changed(doc.path, now):
                return
            if all(f.data.get("stale") for f in shown):
                return
            doc.overlay["run"] = mark_stale(shown)
        self._publish(doc.path, doc.visible(), doc.version)
