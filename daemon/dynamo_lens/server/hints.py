"""Static hints in the daemon: computed from the source alone while the user types, moved with
the text, confirmed or refuted by real runs, and the size limit past which a file gets none.

No user code runs here: this is all Restricted Mode shows, beside syntax errors.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from ..findings import FileResult, Finding, Kind, Severity
from ..static import Reconciler, analyze_source, reachable_functions
from ..texts.locate import MAX_SOURCE_BYTES
from ..texts.source import decode_source, syntax_error
from .context import Context
from .debounce import Debouncer
from .documents import DocState, shift_findings

# Model files are kilobytes; a generated or data file of megabytes is not one.
MAX_FILE_BYTES = MAX_SOURCE_BYTES


def _disk_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


class Hints:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.reconciler = Reconciler()
        self._debouncer = Debouncer("static-hints")

    def close(self) -> None:
        self._debouncer.close()

    def too_big(self, doc: DocState) -> bool:
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
            self.ctx.docs.publish(doc)
        return True

    def compute(self, doc: DocState, text: str | None = None) -> None:
        """Hints from the source alone (no user code runs), for ``text`` (default: the
        editor's text now)."""
        if text is None:
            text = doc.text
        if text is None:
            try:
                text = Path(doc.path).read_text()
            except (OSError, UnicodeDecodeError):
                return
        hints = self.reconciler.visible(doc.path, text, analyze_source(text, doc.path))
        if not self.ctx.trusted:
            hints = [replace(h, note="dynamic analysis needs a trusted workspace") for h in hints]
        elif self.ctx.torch_version == "none":
            note = "dynamic analysis needs torch in this interpreter"
            hints = [replace(h, note=note) for h in hints]
        doc.hints = hints

    def after_edit(self, doc: DocState, delay: float = 0.1) -> None:
        """The edit pass, on the debouncer's thread: move the shown findings to where their
        lines went, recompute hints, publish. A pass that a newer edit overtook publishes
        nothing (the newer edit's pass follows); a burst of edits is one pass."""

        def fire() -> None:
            with self.ctx.docs.lock:
                new = doc.text
                old = doc.shown_text
                if new is not None and old is not None and old != new:
                    doc.findings = shift_findings(doc.findings, old, new, doc.path)
                    doc.overlay = {
                        k: shift_findings(v, old, new, doc.path) for k, v in doc.overlay.items()
                    }
                    doc.hints = shift_findings(doc.hints, old, new, doc.path)
                doc.shown_text = new
            self.compute(doc, new)
            if doc.text is not new:
                return
            self.ctx.docs.publish(doc)

        self._debouncer.call(doc.path, delay, fire)

    def reconcile(self, doc: DocState, result: FileResult) -> None:
        """A dynamic run confirms the hints it found and refutes the rest of what it covered."""
        text = doc.analysed_text or ""
        errors = any(f.kind == Kind.ERROR for f in result.all_findings())
        covered: set[str] | None = None
        if result.reports and not errors:
            covered = set().union(*reachable_functions(text, doc.path).values())
        self.reconciler.update_dynamic(doc.path, text, result.all_findings(), covered)
        self.compute(doc)

    def static_only(self, doc: DocState) -> None:
        """What may be shown without running anything (Restricted Mode, a file outside the
        workspace, no torch): bad bytes, syntax errors and hints."""
        data = (doc.text or "").encode() if doc.text is not None else Path(doc.path).read_bytes()
        text, bad = decode_source(doc.path, data)
        if bad is None and text is not None:
            bad = syntax_error(doc.path, text)
        doc.findings = [bad] if bad else []
        self.compute(doc)
        self.ctx.docs.publish(doc)
