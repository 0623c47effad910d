"""Notebooks open in the editor (LSP notebook sync): static hints on their cells while the user
types, and the check's findings (runs/notebook.py: the cells run as one program, and under
torch's trace) on save in a trusted workspace. Findings are by cell and line in the cell.

No LSP here: the edge (lsp/notebooksync.py) hands in the cells' texts as the editor holds them
and sends the findings out to each cell."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..config import ALL_CHECKS
from ..findings import Finding, Kind, Severity, TargetReport, dedupe, from_wire
from ..fixes.catalogue import propose
from ..fixes.rewrite import Rewrite
from ..notebooks.cellmap import CellMap
from ..notebooks.cells import Cell, NotebookError, read_cells
from ..notebooks.kernelfile import kernel_findings
from ..notebooks.program import build
from ..runs.notebook import check_notebook, program_path, syntax_errors
from ..static import analyze_source
from .context import Context
from .debounce import Debouncer

# publish(notebook path, findings by cell index (1-based)): every cell's list, empty ones too.
CellsFn = Callable[[str, dict[int, list[Finding]]], None]


@dataclass
class _Open:
    path: str
    cells: list[Cell] = field(default_factory=list)
    hints: list[Finding] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # from the last check
    checked: dict[int, str] = field(default_factory=dict)  # the cells' text it checked
    reports: list[TargetReport] = field(default_factory=list)  # the last check's targets
    kernel: list[Finding] = field(default_factory=list)  # a live kernel's, by In [n]
    kernel_seen: tuple[float, int] = (0.0, 0)  # the kernel file's mtime and size, read


class Notebooks:
    def __init__(self, ctx: Context, publish: CellsFn) -> None:
        self.ctx = ctx
        self._publish = publish
        self._open: dict[str, _Open] = {}
        self._lock = threading.Lock()
        self._debouncer = Debouncer("notebook-hints")
        # One check at a time: each runs the whole notebook (and takes a worker).
        self._checks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="notebook-check")

    def close(self) -> None:
        self._debouncer.close()
        self._checks.shutdown(wait=False, cancel_futures=True)

    def edited(self, path: str, cells: list[Cell], delay: float = 0.1) -> None:
        """The editor's cells now (opened or changed): hints after a pause in typing."""
        with self._lock:
            nb = self._open.setdefault(path, _Open(path))
            nb.cells = cells
        self._debouncer.call(path, delay, lambda: self._hint(nb))

    def saved(self, path: str) -> None:
        """Run the notebook's check on its saved file, where code may run, with the checks the
        settings run on save; the cells as the editor held them at the save are what its
        findings are placed on."""
        nb = self._open.get(path)
        if nb is None:
            return
        checks = [c for c in self.ctx.config.checks_on_save if c in ALL_CHECKS]
        if not self.ctx.trusted or self.ctx.engine is None or not checks:
            why = "no checks on save" if checks == [] else "Restricted Mode or no torch"
            self.ctx.log(f"{Path(path).name}: saved; not run ({why})")
            return
        self._checks.submit(self._check, nb, list(nb.cells), checks)

    def closed(self, path: str) -> None:
        with self._lock:
            self._open.pop(path, None)

    def shown(self, path: str) -> dict[int, list[Finding]]:
        """What each cell shows: the check's findings for cells unchanged since it ran, and
        the hints for lines none of those sit on."""
        nb = self._open.get(path)
        if nb is None:
            return {}
        now = {c.index: c.source for c in nb.cells}
        kept = [
            f for f in nb.findings if f.cell is None or nb.checked.get(f.cell) == now.get(f.cell)
        ]
        kept += self._from_kernel(nb)
        taken = {(f.cell, f.line) for f in kept}
        out: dict[int, list[Finding]] = {c.index: [] for c in nb.cells}
        for f in dedupe(kept + [h for h in nb.hints if (h.cell, h.line) not in taken]):
            out.setdefault(f.cell or 1, []).append(f)
        return out

    def targets_in(self, path: str, cell: int) -> list[tuple[TargetReport, bool]]:
        """The last check's targets defined in ``cell``, each with whether the cell changed
        since (a stale summary says so)."""
        nb = self._open.get(path)
        if nb is None:
            return []
        now = {c.index: c.source for c in nb.cells}
        changed = nb.checked.get(cell) != now.get(cell)
        return [(r, changed) for r in nb.reports if r.cell == cell]

    def hover(
        self, path: str, cell: int, line: int
    ) -> tuple[list[Finding], TargetReport | None, bool]:
        """The findings on ``line`` of ``cell``, and the target to summarise there (the one
        defined on that line, else the first finding's) with whether it is stale."""
        flagged = [
            f for f in self.shown(path).get(cell, []) if f.line <= line <= max(f.end_line, f.line)
        ]
        targets = self.targets_in(path, cell)
        here = next(((r, s) for r, s in targets if r.line == line), None)
        if here is None and flagged and (nb := self._open.get(path)) is not None:
            stale = self.targets_in(path, cell)[0][1] if targets else False
            named = next((r for r in nb.reports if r.target == flagged[0].target), None)
            here = (named, stale) if named is not None else None
        return flagged, here[0] if here else None, here[1] if here else False

    def rewrites(self, path: str, cell: int, line: int, kind: Kind) -> list[Rewrite]:
        """The catalogue's rewrites for a break (or recompile) at ``line`` of ``cell``, as
        lines of that cell; only those that stay inside it and touch no IPython line. Nobody
        has run them: the edge labels them not verified."""
        nb = self._open.get(path)
        if nb is None:
            return []
        program = build(nb.cells, Path(path).name, str(Path(path).parent))
        at = program.line_of(cell, line)
        if at is None:
            return []
        shadow = str(program_path(self.ctx.root, Path(path)))
        finding = Finding(kind, Severity.WARNING, shadow, at, 1, at, 2, "", target="notebook")
        magic = {(n.cell, n.line) for n in program.notes}
        out = []
        for rw in propose(finding, program.text, True, self.ctx.compile_args):
            places = [program.to_cell(n) for n in range(rw.start, rw.end + 1)]
            lines = [p[1] for p in places if p is not None and p[0] == cell and p not in magic]
            if len(lines) == len(places):  # all inside this cell, none an IPython line
                out.append(replace(rw, path=path, start=lines[0], end=lines[-1], kept=()))
        return out

    def _from_kernel(self, nb: _Open) -> list[Finding]:
        """A live kernel's findings (``%load_ext dynamo_lens``), each on the cell that last ran
        as its ``In [n]`` (the editor's execution summary): re-read when the kernel wrote."""
        source = kernel_findings(nb.path)
        try:
            st = source.stat()
            seen = (st.st_mtime, st.st_size)
            if seen != nb.kernel_seen:
                doc = json.loads(source.read_text(encoding="utf-8"))
                nb.kernel = from_wire(doc.get("findings", []), list[Finding])
                nb.kernel_seen = seen
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            if not isinstance(exc, FileNotFoundError):
                self.ctx.log(f"{Path(nb.path).name}: the kernel's findings are unreadable: {exc}")
            nb.kernel, nb.kernel_seen = [], (0.0, 0)
            return []
        by_count = {c.execution_count: c.index for c in nb.cells if c.execution_count}
        out = []
        for f in nb.kernel:
            cell = by_count.get(f.execution_count) if f.execution_count is not None else None
            if cell is not None:
                note = f"seen in the live kernel, In [{f.execution_count}]"
                out.append(replace(f, path=nb.path, cell=cell, note=note))
        return out

    def _hint(self, nb: _Open) -> None:
        cells = nb.cells  # ``edited`` replaces the list: identity tells a newer edit
        path = Path(nb.path)
        program = build(cells, path.name, str(path.parent))
        shadow = program_path(self.ctx.root, path)
        cmap = CellMap(program, str(shadow), nb.path, path.name)
        hints = [cmap.finding(f) for f in analyze_source(program.text, str(shadow))]
        hints += syntax_errors(program, nb.path)
        if not self.ctx.trusted:
            hints = [replace(h, note="dynamic analysis needs a trusted workspace") for h in hints]
        if nb.cells is cells:  # not overtaken by a newer edit
            nb.hints = hints
            self._publish(nb.path, self.shown(nb.path))

    def _check(self, nb: _Open, at_save: list[Cell], checks: list[str]) -> None:
        engine = self.ctx.engine
        if engine is None:
            return
        cells = {c.index: c.source for c in at_save}
        try:
            # Read once: the check runs these cells and its findings are numbered by them, so
            # a file changed meanwhile cannot shift them onto other cells.
            on_disk = read_cells(Path(nb.path))
            result = check_notebook(engine, Path(nb.path), checks, cells=on_disk)
        except NotebookError as exc:
            self.ctx.log(f"{Path(nb.path).name}: not checked: {exc}")
            return
        except Exception as exc:  # the daemon outlives whatever the notebook does
            self.ctx.log(f"{Path(nb.path).name}: the check failed: {type(exc).__name__}: {exc}")
            return
        # The check numbers the file's cells, markdown included; the editor may send its Python
        # cells only (vscode-languageclient filters them by our selector): one to the other.
        to_shown = _positions(on_disk, at_save)
        found = [
            replace(f, cell=to_shown[f.cell]) if f.cell is not None else f
            for f in result.all_findings()
            if f.kind is not Kind.STATIC_HINT and (f.cell is None or f.cell in to_shown)
        ]
        said = [*result.notebook.left_out, *result.notebook.notes] if result.notebook else []
        found += [
            Finding(
                Kind.SKIPPED,
                Severity.HINT,
                nb.path,
                n.line,
                1,
                n.line,
                2,
                n.what,
                cell=to_shown[n.cell],
            )
            for n in said
            if n.cell in to_shown
        ]
        reports = [
            replace(r, cell=to_shown[r.cell])
            for r in result.reports
            if r.cell is not None and r.cell in to_shown
        ]
        nb.findings, nb.checked, nb.reports = found, cells, reports
        self.ctx.log(f"{Path(nb.path).name}: checked, {len(found)} finding(s)")
        self._publish(nb.path, self.shown(nb.path))


def _positions(on_disk: list[Cell], shown: list[Cell]) -> dict[int, int]:
    """The file's cell positions -> the editor's: code cells in order, where the editor holds
    as many; else by equal text, in order (a cell the editor has not saved matches none)."""
    disk = [c for c in on_disk if c.kind == "code"]
    mine = [c for c in shown if c.kind == "code"]
    if len(disk) == len(mine):
        return {a.index: b.index for a, b in zip(disk, mine, strict=True)}
    by_text: dict[str, list[int]] = {}
    for c in mine:
        by_text.setdefault(c.source, []).append(c.index)
    return {c.index: by_text[c.source].pop(0) for c in disk if by_text.get(c.source)}
