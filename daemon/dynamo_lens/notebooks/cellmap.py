"""The analysis of a notebook's program, put back on the notebook: every place in the program
file becomes (the notebook, a cell, a line in that cell). The findings are the analysis's
own, moved; their messages are not rewritten."""

from __future__ import annotations

import dataclasses
import os

from ..findings import FileResult, Finding, Frame, NotebookRun, TargetId
from .program import Program


class CellMap:
    def __init__(self, program: Program, shadow: str, notebook: str, target_file: str) -> None:
        self.program = program
        self.shadow = os.path.realpath(shadow)
        self.notebook = notebook
        self.target_file = target_file  # the notebook as a target's file part (relative)

    def ours(self, path: str) -> bool:
        return bool(path) and os.path.realpath(path) == self.shadow

    def _place(self, line: int, end_line: int) -> tuple[int | None, int, int]:
        """(cell, line, end line) in the notebook for a program range; a line of the
        prelude (ours, not the user's) is put on the first line."""
        at = self.program.to_cell(line)
        if at is None:
            return None, 1, 1
        end = self.program.to_cell(end_line)
        return at[0], at[1], end[1] if end is not None and end[0] == at[0] else at[1]

    def frame(self, fr: Frame) -> Frame:
        if not self.ours(fr.path):
            return fr
        cell, line, end = self._place(fr.line, fr.end_line or fr.line)
        return dataclasses.replace(
            fr, path=self.notebook, line=line, end_line=end if fr.end_line else 0, cell=cell
        )

    def finding(self, f: Finding) -> Finding:
        stack = [self.frame(fr) for fr in f.stack]
        target = self.target(f.target) if f.target else f.target
        if not self.ours(f.path):
            return dataclasses.replace(f, stack=stack, target=target)
        cell, line, end = self._place(f.line, f.end_line)
        # Our program file's name is ours, not the user's: an error that names it (``importing
        # model.ipynb.py raised``) names the notebook. Torch's own words are left as they are.
        ours = os.path.basename(self.shadow)
        message = f.message.replace(ours, os.path.basename(self.notebook))
        data = dict(f.data)
        # A rewrite of the program's lines is not one of the notebook's: fixes for cells
        # are not offered (yet), and never written into the .ipynb as text.
        data.pop("fix", None)
        return dataclasses.replace(
            f,
            path=self.notebook,
            line=line,
            end_line=end,
            message=message,
            stack=stack,
            target=target,
            cell=cell,
            data=data,  # type: ignore[arg-type]
        )

    def target(self, name: str) -> str:
        tid = TargetId.parse(name)
        if tid.file and (self.ours(tid.file) or tid.file.endswith(os.path.basename(self.shadow))):
            unit = tid.unit
            # A compiled function from a run is named by its line (``forward@24``): the
            # program's line, which is a cell's line in the notebook.
            fn, at, line = unit.rpartition("@")
            if at and line.isdigit() and (place := self.program.to_cell(int(line))):
                unit = f"{fn}@cell{place[0]}:{place[1]}"
            return str(TargetId(self.target_file, unit, tid.variant))
        return name

    def result(self, res: FileResult, content_hash: str, run: NotebookRun) -> FileResult:
        out = dataclasses.replace(
            res,
            path=self.notebook,
            content_hash=content_hash,
            findings=[self.finding(f) for f in res.findings],
            reports=[],
            notebook=run,
        )
        for rep in res.reports:
            # A target defined in a cell: its line inside that cell.
            cell, line, _ = (
                self._place(rep.line, rep.line) if self.ours(rep.path) else (None, rep.line, 0)
            )
            out.reports.append(
                dataclasses.replace(
                    rep,
                    target=self.target(rep.target),
                    path=self.notebook if self.ours(rep.path) else rep.path,
                    line=line,
                    cell=cell,
                    findings=[self.finding(f) for f in rep.findings],
                    content_hash=content_hash,
                )
            )
        return out
