"""The last run in the editor: a command run from it ("Run File with Analysis") or a trace
loaded, its findings shown beside the editor's own and kept in the cache folder across
restarts until cleared or replaced.

A file that changed since the run keeps its run findings, marked stale: they describe the code
as it ran, which is still worth seeing, but not as current as a fresh analysis.

A trace can come from anywhere (loading one is allowed in Restricted Mode), so what it says is
bounded before it is shown: a run is stored only once it has been published (a run that cannot
be shown is never brought back at the next start), a stored run is validated again when a
daemon starts (off the event loop), and each file shows at most ``MAX_FINDINGS_PER_FILE``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..findings import Finding, FindingData, Kind, Severity, TargetReport
from ..runs.command import TracedRun, trace_results
from ..runs.loaded import LoadedRun
from ..runs.tracelog import printable
from ..texts.source import content_hash, file_hash
from .context import Context
from .documents import DocState, mark_stale

# One file gets at most this many run findings; the rest are counted in one note.
MAX_FINDINGS_PER_FILE = 200


class LastRun:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._lock = threading.Lock()
        self._loading = threading.Lock()  # one trace read at a time: each replaces the last
        self.run: LoadedRun | None = None

    def restore(self) -> None:
        """The stored run, back with a new daemon (call it off the event loop): what no longer
        exists is dropped, the rest shown."""
        run = self.ctx.cache.get_run()
        if run is None:
            self.ctx.log("last run: none stored (or refused)")
            return
        kept = [r for r in run.results if file_hash(r.path) is not None]
        if len(kept) != len(run.results):
            paths = {r.path for r in kept}
            run = replace(
                run, results=kept, summary=[row for row in run.summary if row.path in paths]
            )
            self._store(run)
        self.run = run
        self.show(self.paths())
        self.ctx.log(f"last run: {run.provenance} shown again ({len(kept)} file(s))")

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
        if len(out) > MAX_FINDINGS_PER_FILE:
            more = len(out) - MAX_FINDINGS_PER_FILE
            out = [*out[:MAX_FINDINGS_PER_FILE], _more_note(path, more, run)]
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
    def _replace(self, run: LoadedRun | None) -> None:
        """Show ``run`` instead of the last one (None: clear), then store it, so a restart shows
        the same. A run that cannot be shown is not stored: the last one comes back."""
        with self._lock:
            previous = self.run
            before = self.paths()
            self.run = run
            try:
                self.show(before | self.paths())
            except Exception:
                self.run = previous
                self.show(before | self.paths())
                raise
            if run is None:
                self.ctx.cache.clear_run()
            else:
                self._store(run)

    def _store(self, run: LoadedRun) -> None:
        try:
            self.ctx.cache.put_run(run)
        except OSError:
            pass  # shown all the same; only the restart loses it

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
        torch_of: Callable[[], str] | None = None,
    ) -> dict[str, Any]:
        """A run's trace, read (no user code runs: allowed in Restricted Mode): its findings
        replace the previous run's, beside the editor's own, and are kept across restarts.
        ``torch_of``: the run's torch where its trace does not say (torch 2.8)."""
        with self._loading:
            run = trace_results(paths, self.ctx.root, [], provenance)
            run = replace(run, exit_code=exit_code, cancelled=cancelled)
            if not run.torch and torch_of is not None:
                run = replace(run, torch=torch_of())
            if run.outside:
                # The editor shows what it can open: a file of this workspace.
                ws = self.ctx.workspace
                self.ctx.log(
                    f"{provenance}: {run.outside} record(s) name no file in this workspace "
                    "(run `dynamo-lens trace` with --workspace or --path-map to see them)"
                )
                run = replace(
                    run,
                    results=[r for r in run.results if ws.contains(r.path)],
                    summary=[row for row in run.summary if ws.contains(row.path)],
                )
            self._replace(run)
        return {
            "files": len(run.results),
            "findings": sum(len(r.findings) for r in run.results),
            "records": run.records,
            "skipped": run.skipped,
        }

    def load_named(self, name: str) -> dict[str, Any]:
        """``load`` of a trace folder or log the user named: relative to the workspace (never
        the daemon's working directory), absolute as given. ValueError says what is wrong."""
        if not name.strip():
            raise ValueError("loadTrace wants the path of a trace folder or log file")
        p = Path(os.path.normpath(self.ctx.root / name))  # an absolute path stays itself
        if not p.exists():
            raise ValueError(f"no such trace folder or file: {name}")
        where = p.relative_to(self.ctx.root) if p.is_relative_to(self.ctx.root) else p
        return self.load([p], f"trace {printable(where)}")

    def argv(self, path: str | None, command: str | None) -> list[str]:
        """What "Run File with Analysis" runs: ``command`` (``dynamoLens.runCommand``, with
        ``${file}`` for the file), else the file with the worker's interpreter. A leading
        ``python`` is that interpreter too: the one the user chose for this workspace."""
        python = self.ctx.python or sys.executable
        if command and command.strip():
            try:
                words = shlex.split(command)
            except ValueError as exc:  # an unbalanced quote
                raise ValueError(
                    f"dynamoLens.runCommand cannot be read ({exc}): {command}"
                ) from exc
            argv = [_with_file(w, path or "") for w in words]
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
        """Whatever the command got through before it failed or was cancelled is shown. Its
        trace folder is read only if it is still the folder the daemon made: a command that
        put a link there would have the daemon read wherever it points."""
        how = ", cancelled" if run.cancelled else f", exit code {code}" if code else ""
        folder = run.trace_dir
        ours = folder.is_dir() and not folder.is_symlink()
        if not ours:
            self.ctx.log(f"{run.provenance}: its trace folder {folder} was replaced; not read")
        try:
            out = self.load(
                [folder] if ours else [],
                run.provenance + how,
                code,
                run.cancelled,
                torch_of=run.torch_version,
            )
        finally:
            if folder.is_symlink():
                folder.unlink(missing_ok=True)
            shutil.rmtree(folder, ignore_errors=True)
        return {**out, "exitCode": code, "cancelled": run.cancelled}

    def clear(self) -> int:
        paths = self.paths()
        self._replace(None)
        return len(paths)


def _with_file(word: str, path: str) -> str:
    """``${file}`` in one word of the run command: the path itself when it is the whole word (an
    argument), quoted for a shell when it sits inside a longer word (``bash -c 'python
    ${file}'``), so that a file named ``a;touch x;b.py`` stays a file name."""
    if word == "${file}":
        return path
    return word.replace("${file}", shlex.quote(path))


def _hash(text: str) -> str:
    return content_hash(text.encode())


def _more_note(path: str, more: int, run: LoadedRun | None) -> Finding:
    return Finding(
        Kind.SKIPPED,
        Severity.INFORMATION,
        path,
        1,
        1,
        1,
        2,
        f"{more} more finding(s) of the run in this file are not shown (the first "
        f"{MAX_FINDINGS_PER_FILE} are); the run's report lists them all",
        note=f"seen in {run.provenance}" if run else "",
    )
