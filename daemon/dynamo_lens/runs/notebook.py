"""A notebook checked: its code cells, in order, as one program (notebooks/program.py), run
once in the worker with torch's structured trace recorded (the notebook's own torch.compile
calls, read as ``dynamo-lens run`` reads a run), then analysed as a file is (compile_example in
a cell, guessed targets). Both are put back on the cells (notebooks/cellmap.py).

The program is written to the user's cache (texts/locate.py ``notebook_programs``), never into
the workspace; the user's code runs there as a file's does, under the same budget."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from ..engine.analysis import Engine
from ..findings import (
    FileResult,
    Finding,
    NotebookRun,
    dedupe,
)
from ..notebooks.cellmap import CellMap
from ..notebooks.cells import Cell, NotebookError, read_cells
from ..notebooks.program import Program, build
from ..texts.errors import error_at
from ..texts.locate import notebook_programs
from .command import trace_results
from .loaded import LoadedRun

TRACED_CHECKS = ("breaks", "recompiles")


def program_path(root: Path, notebook: Path) -> Path:
    """Where ``notebook``'s program is written: its path under the workspace, kept, so two
    notebooks of one name in two folders do not share one."""
    try:
        rel = notebook.relative_to(root)
    except ValueError:
        rel = Path(hashlib.sha256(str(notebook).encode()).hexdigest()[:16]) / notebook.name
    return Path(notebook_programs(str(root))) / rel.parent / (rel.name + ".py")


def _write(path: Path, text: str) -> None:
    """Atomically: a worker or a run that reads it never sees half a program."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_notebook(
    engine: Engine,
    path: Path,
    checks: Sequence[str] | None = None,
    *,
    cells: list[Cell] | None = None,
) -> FileResult:
    """``path``'s findings, each on its cell and line (``cells``: the notebook's, as already
    read; default: read now)."""
    path = Path(os.path.abspath(path))
    try:
        data = path.read_bytes()
        if cells is None:
            cells = read_cells(path)
    except (OSError, NotebookError) as exc:
        return FileResult(str(path), "", findings=[error_at(str(path), 1, str(exc))])
    digest = hashlib.sha256(data).hexdigest()
    program = build(cells, path.name, str(path.parent))
    shadow = program_path(engine.root, path)
    _write(shadow, program.text)
    cmap = CellMap(program, str(shadow), str(path), _relative(path, engine.root))
    wanted = list(checks or engine.config.checks)
    run = NotebookRun(program.cells, program.code_cells, program.notes, program.left_out)
    traced = any(c in wanted for c in TRACED_CHECKS) and program.code_cells > 0
    with tempfile.TemporaryDirectory(prefix="dynamo-lens-notebook-") as folder:
        trace = Path(folder) / "trace.log"
        # The cells run once, in the worker, from the notebook's folder (relative paths are the
        # notebook's, as in its kernel): torch's trace records the notebook's own compiles as
        # they run, then its compile_example and guessed models are analysed as a file's are.
        result = engine.analyze_file(
            shadow,
            wanted,
            cwd=str(path.parent),
            trace_to=str(trace) if traced else None,
        )
        ran = _read(trace, engine) if traced else None
    out = cmap.result(result, digest, run)
    out.findings += syntax_errors(program, str(path))
    if ran is not None:
        out.ran = True
        found = [f for r in ran.results for f in r.all_findings()]
        mapped = [cmap.finding(f) for f in found if _wanted(f, wanted)]
        # What the notebook's own calls showed outranks a zero-config guess at the same place:
        # the guess's inputs were inferred, the run's were the user's.
        confirmed = {_place(f) for f in mapped}
        for rep in out.reports:
            if rep.guess:
                rep.findings = [f for f in rep.findings if _place(f) not in confirmed]
        seen = {f.key() for f in out.all_findings()}
        for g in mapped:
            if g.key() not in seen:
                out.findings.append(g)
                seen.add(g.key())
        # The functions the run compiled are targets too (``targets`` lists what ran); their
        # findings are listed once, above.
        reports = [rep for r in ran.results for rep in r.reports]
        compiled = cmap.result(FileResult(str(shadow), digest, reports=reports), digest, run)
        out.reports += [dataclasses.replace(r, findings=[]) for r in compiled.reports]
    out.findings = dedupe(out.findings)
    return out


def _read(trace: Path, engine: Engine) -> LoadedRun | None:
    if not trace.exists():
        return None  # the worker never ran the cells (a dead worker, a cancel)
    provenance = f"the notebook's run at {time.strftime('%H:%M')}"
    return trace_results([trace], engine.root, [], provenance)


def _place(f: Finding) -> tuple[str, str, int | None, int, str | None]:
    return (f.kind.value, f.path, f.cell, f.line, f.gb_id)


def _wanted(f: Finding, checks: Sequence[str]) -> bool:
    kind = f.kind.value
    if kind == "recompile":
        return "recompiles" in checks
    return "breaks" in checks


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def syntax_errors(program: Program, notebook: str) -> list[Finding]:
    """A finding on each cell left out for a syntax error."""
    out = []
    for note, column in program.syntax_errors:
        f = error_at(
            notebook,
            note.line,
            f"{note.what} in cell {note.cell}; the cell was left out, the others ran",
            column=column,
        )
        f.cell = note.cell
        out.append(f)
    return out
