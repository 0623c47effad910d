"""The daemon's analysis service: the one object the LSP edge talks to. No LSP types here.

It wires the parts together and hears about the editor's documents and the disk; the parts
do the work:

- ``analyses``: what to analyse when, running an analysis job, publishing its result;
- ``hints``: static hints, their reconciliation with real runs, the size limit;
- ``queries``: read-only questions (hover, staleness, targets, quick-fix edits);
- ``last_run``: the last traced run or loaded trace (``lastrun.py``);
- ``docs``: every known file and the one way its findings go out (``documents.py``);
- ``known``: what goes out marked against the workspace's baseline (``known.py``).

The LSP edge (``lsp/``) calls ``open``/``save``/``change``/``close_doc`` and the parts'
methods, and renders what ``publish`` hands back.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import EXAMPLE_DEF, Config
from ..engine.analysis import Engine
from ..texts.source import content_hash, file_hash
from .analyses import Analyses
from .cache import ResultCache, default_directory
from .context import Context
from .documents import Documents, PublishFn, holds
from .hints import Hints
from .known import KnownFindings
from .lastrun import LastRun
from .notebooks import CellsFn, Notebooks
from .queries import Queries
from .scheduler import Job
from .verdicts import Verdicts

StatusFn = Callable[[dict[str, Any]], None]
LogFn = Callable[[str], None]


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
        warn: LogFn | None = None,
        publish_cells: CellsFn | None = None,
    ) -> None:
        self.docs = Documents(publish)
        self.ctx = Context(
            root,
            config,
            trusted,
            self.docs,
            ResultCache(cache_dir or default_directory(root), root),
            log,
            python,
        )
        self._status = status
        self.environment: dict[str, Any] = {}
        self.last_error = ""
        self.hints = Hints(self.ctx)
        self.last_run = LastRun(self.ctx)
        self.queries = Queries(self.ctx, self.last_run)
        self.analyses = Analyses(self.ctx, self.hints, on_busy=self._busy, on_error=self._failed)
        self.verdicts = Verdicts(self.ctx)
        # ``warn``: a message the user should see once (a baseline that cannot be read).
        self.known = KnownFindings(self.ctx, warn or log)
        self.docs.view = self.known.shown
        self.notebooks = Notebooks(self.ctx, publish_cells or (lambda _path, _cells: None))

    # The shared state, as the LSP edge and tests name it.
    @property
    def root(self) -> Path:
        return self.ctx.root

    def may_run(self, path: str, open_in_editor: bool) -> None:
        """Running a file is the user's request about their code: a workspace file, or one
        they have open in the editor; never an arbitrary path from the wire (ValueError)."""
        if not self.ctx.workspace.contains(path) and not open_in_editor:
            raise ValueError(f"not in the workspace and not open in the editor: {path}")

    @property
    def trusted(self) -> bool:
        return self.ctx.trusted

    @property
    def config(self) -> Config:
        return self.ctx.config

    @config.setter
    def config(self, cfg: Config) -> None:
        self.ctx.config = cfg

    def apply_live(self, cfg: Config) -> None:
        """Settings that apply without a restart (``Config.same_but_live``); every file is
        shown again when what it shows depends on what changed."""
        old, self.ctx.config = self.ctx.config, cfg
        if (old.baseline, old.known_findings) != (cfg.baseline, cfg.known_findings):
            self.docs.republish()

    @property
    def engine(self) -> Engine | None:
        return self.ctx.engine

    @engine.setter
    def engine(self, engine: Engine | None) -> None:
        self.ctx.engine = engine

    # -- lifecycle and status ----------------------------------------------------------------
    def start(self) -> None:
        # The last run's findings come back with the daemon (a restart, a new session): read,
        # validated and published off the event loop (a stored run can be large).
        threading.Thread(target=self._restore_run, name="last-run", daemon=True).start()
        ctx = self.ctx
        if not ctx.trusted:
            self._emit(
                "restricted",
                "Restricted Mode: no user code runs; trust the workspace "
                "for graph breaks, recompiles and timings.",
            )
            return
        if ctx.torch_version == "none" and ctx.python is None:
            self.last_error = (
                f"torch is not installed for {sys.executable}: static hints only; install "
                "torch in this interpreter (or choose another) for dynamic analysis"
            )
            self._emit("ready", self.last_error)
            return
        engine = ctx.engine = Engine(
            ctx.root, ctx.config, python=ctx.python, on_log=ctx.log, replace_at_once=True
        )
        self._emit("warming", "starting the worker (importing torch)")
        engine.start()

        def warm() -> None:
            try:
                self.environment = engine.environment()
                ctx.torch_version = str(self.environment.get("torch", ctx.torch_version))
                # Jobs may have queued while torch was importing: "ready" only when idle.
                n = self.analyses.scheduler.count()
                if n:
                    self._emit("busy", f"{n} analysis job(s)")
                else:
                    self._emit("ready", "")
            except Exception as exc:
                self.last_error = f"worker failed to start: {exc}"
                self._emit("error", self.last_error)

        threading.Thread(target=warm, name="warmup", daemon=True).start()

    def _restore_run(self) -> None:
        try:
            self.last_run.restore()
        except Exception as exc:  # a stored run that cannot be shown is dropped, never fatal
            self.ctx.log(f"the last run could not be shown again: {exc}")
            self.ctx.cache.clear_run()

    def close(self) -> None:
        self.hints.close()
        self.notebooks.close()
        self.analyses.close()
        if self.ctx.engine is not None:
            self.ctx.engine.close()

    def _emit(self, state: str, message: str) -> None:
        torch = self.ctx.torch_version
        self._status(
            {
                "state": state,
                "torch": self.environment.get("torch") or (torch if torch != "none" else None),
                "devices": self.environment.get("devices", []),
                "jobs": self.analyses.scheduler.count(),
                "message": message,
            }
        )

    def _busy(self, n: int) -> None:
        if not self.ctx.trusted:
            return
        if n:
            self._emit("busy", f"{n} analysis job(s)")
        elif self.environment:
            self._emit("ready", self.last_error)

    def _failed(self, job: Job, exc: BaseException) -> None:
        self.last_error = f"analysis of {Path(job.path).name} failed: {type(exc).__name__}: {exc}"
        self.ctx.log(self.last_error)
        self._emit("error", self.last_error)

    # -- the editor's documents --------------------------------------------------------------
    def open(self, path: str, text: str, version: int | None) -> None:
        doc = self.docs.get(path)
        doc.text, doc.version = text, version
        if self.hints.too_big(doc):
            return
        doc.shown_text = text
        self.last_run.on_open(doc, text)  # closed (and forgotten) since the run was loaded
        # Hints come from a pass off the event loop: a big file must not hold up requests.
        self.hints.after_edit(doc, 0.0)
        analyses = self.analyses
        if self.ctx.engine is not None and analyses.publish_cached(doc):
            # Known result for this exact content: shown at once; slower checks may follow.
            wanted = analyses.wanted_checks()
            if any(c not in wanted for c in self.ctx.config.checks):
                analyses.request(path, "open")
            return
        analyses.request(path, "open")

    def save(self, path: str, text: str | None, version: int | None) -> None:
        doc = self.docs.get(path)
        if text is not None:
            doc.text = text
        doc.version = version
        if self.hints.too_big(doc):
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
        self.last_run.outdated(doc, doc.saved_hash)
        # The static pass waits: a save's analysis starts first, and a burst of saves is handled
        # in milliseconds (the text's hints are already there from didChange).
        self.hints.after_edit(doc, 0.0)
        self.analyses.request(path, "save")

    def change(self, path: str, text: str, version: int | None) -> None:
        doc = self.docs.get(path)
        with self.docs.lock:
            if doc.shown_text is None:
                doc.shown_text = doc.text
            doc.text, doc.version = text, version
        if self.hints.too_big(doc):
            return
        self.hints.after_edit(doc)

    def close_doc(self, path: str) -> None:
        self.analyses.scheduler.cancel(path)
        if not self.ctx.config.keep_diagnostics_on_close and self.docs.forget(path) is not None:
            self.docs.clear(path)

    def disk_changed(self, path: str) -> None:
        """A file changed outside the editor (git checkout, codegen): re-check it and every
        analysed file that imports it. The editor's own saves also reach the watcher: those
        bytes are already being analysed. The baseline changed: every file is shown again."""
        if self.known.is_baseline(path):
            self.docs.republish()
            return
        doc = self.docs.find(path)
        if path in self.last_run.paths():
            self.last_run.outdated(self.docs.get(path), file_hash(path))
        if doc is None or (doc.text is None and doc.result is None):
            # Never opened or analysed (at most a run's findings shown in it): run it only when
            # it declares a target. A file that declares nothing would be imported just to
            # guess, and importing runs its module-level code; its dependants are re-checked
            # all the same.
            try:
                data = Path(path).read_bytes()
            except OSError:
                return
            if not EXAMPLE_DEF.search(data):
                for p in self.analyses.dependants(path):
                    self.analyses.recheck(p)
                return
        else:
            try:
                now = content_hash(Path(path).read_bytes())
            except OSError:
                return
            if now in {doc.saved_hash, doc.result.content_hash if doc.result else None}:
                return
        self.analyses.request(path, "disk")
