"""What the daemon knows of each file: editor text, versions, results, and findings moved with
edits; the store of them all and the one way a file's findings go out. No LSP."""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..findings import FileResult, Finding, FindingData, dedupe
from ..texts.source import decode_source


@dataclass
class DocState:
    path: str
    version: int | None = None
    text: str | None = None  # what the editor holds now
    shown_text: str | None = None  # the text the shown findings' and hints' lines refer to
    analysed_text: str | None = None  # the text the current result came from
    result: FileResult | None = None
    saved_text: str | None = None  # what the editor held when it last saved
    saved_hash: str | None = None  # the hash of those bytes on disk
    findings: list[Finding] = field(default_factory=list)  # shifted to the current text
    # Findings placed in this file by other files' results (a helper that breaks), by source.
    overlay: dict[str, list[Finding]] = field(default_factory=dict)
    # Static hints for the current text that no dynamic run has confirmed or refuted.
    hints: list[Finding] = field(default_factory=list)

    def visible(self) -> list[Finding]:
        out = list(self.findings)
        for fs in self.overlay.values():
            out += fs
        taken = {(f.path, f.line) for f in out}
        out += [h for h in self.hints if (h.path, h.line) not in taken]
        return dedupe(out)


# What a file shows: its findings and the editor version they are for.
Shown = tuple[list[Finding], int | None]
# publish(path, shown): ``shown`` is read when the message is sent, not when it is asked for.
# Edit passes, analyses and Restricted Mode's syntax check publish from different threads; a
# snapshot taken early and sent late overwrote a newer one (a syntax error published, then
# replaced by the hint pass's older, empty view). Read at sending, the last message sent is
# always the latest state.
PublishFn = Callable[[str, Callable[[], Shown]], None]


class Documents:
    """Every file the daemon knows (open in the editor, analysed, or holding findings another
    file placed there), by real path. ``lock`` guards changes that span a document's fields."""

    def __init__(self, publish: PublishFn) -> None:
        self._docs: dict[str, DocState] = {}
        self._publish = publish
        self.lock = threading.RLock()
        # What of a file's findings goes out (known.py: marked against the baseline, the
        # known ones hidden as the settings ask); called as they are sent, outside the lock.
        self.view: Callable[[list[Finding]], list[Finding]] = lambda findings: findings

    def get(self, path: str) -> DocState:
        """The document, created on first use."""
        with self.lock:
            return self._docs.setdefault(path, DocState(path))

    def find(self, path: str) -> DocState | None:
        return self._docs.get(path)

    def forget(self, path: str) -> DocState | None:
        with self.lock:
            return self._docs.pop(path, None)

    def all(self) -> list[DocState]:
        with self.lock:
            return list(self._docs.values())

    def paths(self) -> list[str]:
        with self.lock:
            return list(self._docs)

    def publish(self, doc: DocState) -> None:
        """What the user should see in ``doc``, for its version, as they are when sent."""

        def shown() -> Shown:
            with self.lock:
                findings, version = doc.visible(), doc.version
            return self.view(findings), version

        self._publish(doc.path, shown)

    def clear(self, path: str) -> None:
        self._publish(path, lambda: ([], None))

    def republish(self) -> None:
        """Every file again: what they show depends on something that changed (a setting, the
        baseline)."""
        for doc in self.all():
            self.publish(doc)


def mark_stale(findings: list[Finding]) -> list[Finding]:
    """Copies marked as describing code that has changed since they were found."""
    return [replace(f, data=FindingData(**{**f.data, "stale": True})) for f in findings]


def holds(data: bytes, text: str | None) -> bool:
    """Whether ``data`` (a file's bytes) is ``text`` (what the editor saved; None: unknown).

    An editor writes a file by truncating it and writing the new text: a read in between sees
    an empty or half-written file, which no version the user has ever had."""
    return text is None or decode_source("", data)[0] == text


def shift_findings(findings: list[Finding], old: str, new: str, path: str) -> list[Finding]:
    """Move findings of ``path`` to where their lines went in an edit; drop deleted lines;
    mark edited lines stale."""
    a, b = old.splitlines(), new.splitlines()
    mapping: dict[int, tuple[int, bool]] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                mapping[i1 + k + 1] = (j1 + k + 1, False)
        elif tag == "replace" and i2 - i1 == j2 - j1:
            for k in range(i2 - i1):
                mapping[i1 + k + 1] = (j1 + k + 1, True)
    out = []
    for f in findings:
        if f.path != path:
            out.append(f)
            continue
        moved = mapping.get(f.line)
        if moved is None:
            continue
        line, edited = moved
        f = replace(f, line=line, end_line=line + (f.end_line - f.line))
        out.append(mark_stale([f])[0] if edited else f)
    return out


def merge_results(first: FileResult, second: FileResult) -> FileResult:
    """Fold a later run's extra checks (timings, equivalence) into the first run's reports."""
    by_name = {r.target: r for r in second.reports}
    reports = []
    for r in first.reports:
        extra = by_name.get(r.target)
        if extra is not None:
            r = replace(
                r,
                findings=dedupe(r.findings + extra.findings),
                timings=r.timings + extra.timings,
                equivalence=r.equivalence + extra.equivalence,
                checks=list(dict.fromkeys(r.checks + extra.checks)),
            )
        reports.append(r)
    return replace(first, reports=reports, findings=dedupe(first.findings + second.findings))
