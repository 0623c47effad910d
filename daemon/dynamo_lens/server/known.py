"""Known findings in the editor: what a file shows, marked against the workspace's baseline
(``baseline`` in ``[tool.dynamo-lens]``, report/baseline.py), as ``dynamoLens.knownFindings``
asks. No LSP: the severity a known finding is shown at is the edge's (``lsp/convert.py``).

- ``same`` (the default): nothing is marked, nothing read; every finding shows as it is.
- ``hint``: each finding is marked ``known`` or ``new`` (the edge shows a known one as a hint).
- ``hide``: known findings are not shown; new ones are, marked ``new``.

The baseline is read once and again only when its file changes (path, size, mtime, inode). A
baseline that cannot be read never keeps a file's findings from being shown: they are shown as
new, and the user is told once why, until it reads again or fails differently.
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import replace
from pathlib import Path

from ..findings import Finding
from ..report import baseline, fingerprint
from .context import Context, LogFn

# A baseline is JSON of a few hundred bytes a finding: past this it is not one (a baseline
# named by a hostile pyproject.toml must not be read whole on the event loop).
MAX_BASELINE_BYTES = 64_000_000

# What says the baseline's file changed: its path, size, mtime and inode (None: no file).
_Key = tuple[str, int | None, int | None, int | None]


class KnownFindings:
    def __init__(self, ctx: Context, warn: LogFn) -> None:
        self.ctx = ctx
        self._warn = warn
        self._lock = threading.Lock()
        self._key: _Key | None = None
        self._known: baseline.Known | None = None
        self._reported = ""

    def path(self) -> Path | None:
        """The configured baseline, relative to the workspace (as ``check`` reads it)."""
        name = self.ctx.config.baseline
        return self.ctx.root / name if name else None

    def is_baseline(self, path: str) -> bool:
        """Whether ``path`` (a file the watcher saw change) is the configured baseline."""
        mine = self.path()
        return (
            mine is not None
            and os.path.basename(path) == mine.name
            and os.path.realpath(path) == os.path.realpath(mine)
        )

    def known(self) -> baseline.Known | None:
        """The baseline's fingerprints, None when there is none or it cannot be read."""
        path = self.path()
        with self._lock:
            if path is None:
                self._key, self._known, self._reported = None, None, ""
                return None
            try:
                st = os.stat(path)
                key: _Key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
            except OSError:
                st, key = None, (str(path), None, None, None)
            if key == self._key:
                return self._known
            self._key = key
            try:
                if st is not None and not stat.S_ISREG(st.st_mode):
                    raise baseline.BaselineError(f"the baseline {path} is not a regular file")
                if st is not None and st.st_size > MAX_BASELINE_BYTES:
                    raise baseline.BaselineError(
                        f"the baseline {path} is over {MAX_BASELINE_BYTES // 1_000_000} MB"
                    )
                self._known = baseline.read(path)
                if self._reported:
                    self.ctx.log(f"the baseline {path} reads again")
                self._reported = ""
            except baseline.BaselineError as exc:
                self._known = None
                self._report(str(exc))
            return self._known

    def _report(self, problem: str) -> None:
        # Once per problem: every publish asks again, and a file that stays broken must not
        # warn on each keystroke.
        if problem == self._reported:
            return
        self._reported = problem
        text = f"{problem}; known findings are shown as new until it can be read"
        self.ctx.log(text)
        self._warn(f"Dynamo Lens: {text}")

    def shown(self, findings: list[Finding]) -> list[Finding]:
        """What a file shows of ``findings``: copies marked against the baseline and, under
        ``hide``, without the known ones. The findings given are never changed."""
        mode = self.ctx.config.known_findings
        if mode == "same" or not findings:
            return findings
        known = self.known()
        if known is None:
            return findings
        marked = mark(findings, known, self.ctx.root)
        return [f for f in marked if mode != "hide" or f.baseline != baseline.KNOWN]


def mark(findings: list[Finding], known: baseline.Known, root: Path) -> list[Finding]:
    """Copies of ``findings`` with their fingerprint and ``baseline`` set, as ``check`` sets
    them: fingerprints per file (the occurrence index counts among a file's findings, all of
    them), then matched against the baseline's entries. In the order given."""
    out = [replace(f) for f in findings]
    by_path: dict[str, list[Finding]] = {}
    for f in out:
        by_path.setdefault(f.path, []).append(f)
    for group in by_path.values():
        fingerprint.assign(group, root)
        baseline.mark(group, known, root)
    return out
