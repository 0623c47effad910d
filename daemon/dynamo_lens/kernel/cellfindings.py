"""One cell's log (capture.py) read as any run's trace is (runs/extract.py), with the kernel's
cells as user code: IPython compiles each cell under a file name of its own (``<ipython-input-
5-…>``, ipykernel's ``/tmp/ipykernel_…/….py``) and records which execution count it was. A
finding in a cell is named by that count, the ``In [n]``, and the line inside the cell."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from ..findings import FileResult, Finding, Frame, TargetReport
from ..runs.extract import RunReader
from ..runs.paths import PathMap
from ..runs.tracelog import ReadStats, read
from ..texts.locate import Workspace


class KernelWorkspace(Workspace):
    """The kernel's folder, and its cells: both the user's code."""

    def __init__(self, root: Path, cells: dict[str, tuple[int, int]]) -> None:
        super().__init__(root)
        self.cells = cells

    def contains(self, path: str | os.PathLike[str]) -> bool:
        return str(path) in self.cells or super().contains(path)


class KernelPaths(PathMap):
    """A cell's file name is its own place: no file on disk to look for by name."""

    def local(self, path: str) -> str:
        ws = self.ws
        if isinstance(ws, KernelWorkspace) and path in ws.cells:
            return path
        return super().local(path)


@dataclasses.dataclass
class CellRun:
    """What one cell's run compiled: its findings and compiled functions, and the time torch
    spent compiling (Dynamo, and Inductor where it ran)."""

    findings: list[Finding]
    reports: list[TargetReport]
    frames_compiled: int
    compile_seconds: float
    break_seconds: dict[tuple[int | None, int, str | None], float]


def read_cell(
    log: Path, cells: dict[str, tuple[int, int]], root: Path, where: str, strings: dict[int, str]
) -> CellRun:
    """``log`` read with ``cells`` (file name -> (execution count, how far below the cell's
    first line its line 1 is)) as the user's code and ``strings`` as torch's string table
    before it began; findings in a cell get ``where`` as their path (the notebook, when the
    kernel knows it)."""
    ws = KernelWorkspace(root, cells)
    reader = RunReader(ws, KernelPaths(ws), "")
    reader.feed(read([log], ReadStats(), strings=strings))
    results: list[FileResult] = reader.results()
    cell_of = _Cells(cells, where)
    findings = [cell_of.finding(f) for r in results for f in r.findings]
    reports = [cell_of.report(rep) for r in results for rep in r.reports]
    seconds: dict[tuple[int | None, int, str | None], float] = {}
    for row in reader.summary():
        count, offset = cells.get(row.path) or (None, 0)
        seconds[(count, row.line + offset, row.gb_id)] = row.compile_seconds
    return CellRun(
        findings,
        reports,
        reader.frames_compiled,
        reader.dynamo_seconds + reader.inductor_seconds,
        seconds,
    )


class _Cells:
    def __init__(self, cells: dict[str, tuple[int, int]], where: str) -> None:
        self.cells, self.where = cells, where

    def frame(self, fr: Frame) -> Frame:
        at = self.cells.get(fr.path)
        if at is None:
            return fr
        n, offset = at
        end = fr.end_line + offset if fr.end_line else 0
        return dataclasses.replace(
            fr, path=self.where, line=fr.line + offset, end_line=end, execution_count=n
        )

    def finding(self, f: Finding) -> Finding:
        stack = [self.frame(fr) for fr in f.stack]
        at = self.cells.get(f.path)
        if at is None:
            return dataclasses.replace(f, stack=stack, note="")
        n, offset = at
        return dataclasses.replace(
            f,
            path=self.where,
            line=f.line + offset,
            end_line=f.end_line + offset,
            stack=stack,
            execution_count=n,
            note="",
        )

    def report(self, rep: TargetReport) -> TargetReport:
        at = self.cells.get(rep.path)
        target = rep.target
        for name, (count, _) in self.cells.items():
            target = target.replace(name, f"In [{count}]")
        return dataclasses.replace(
            rep,
            path=self.where if at is not None else rep.path,
            line=rep.line + (at[1] if at else 0),
            target=target,
            findings=[self.finding(f) for f in rep.findings],
        )
