"""A notebook checked: its code cells, in order, as one program (notebooks/program.py),
analysed by the engine as a file is (compile_example in a cell, guessed targets), and run
under torch's structured trace as ``dynamo-lens run`` runs a script, for the notebook's own
``torch.compile`` calls. Both are put back on the cells (notebooks/cellmap.py).

The program is written to the user's cache (texts/locate.py ``notebook_programs``), never into
the workspace; the user's code runs there as a file's does, under the same budget."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from ..config import ALL_CHECKS, EXAMPLE_DEF
from ..engine.analysis import Engine
from ..findings import (
    FileResult,
    Finding,
    Kind,
    NotebookRun,
    Severity,
    TargetReport,
    dedupe,
)
from ..notebooks.cellmap import CellMap
from ..notebooks.cells import NotebookError, read_cells
from ..notebooks.program import Program, build
from ..texts.errors import error_at
from ..texts.locate import notebook_programs
from .command import TracedRun, trace_results

TRACED_CHECKS = ("breaks", "recompiles")
# The notebook compiles something itself: its run under the trace has something to show.
OWN_COMPILE = re.compile(r"\b(?:torch\.compile|_dynamo\.optimize)\b")


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
    python: str | None = None,
    on_line: Callable[[str], None] | None = None,
) -> FileResult:
    """``path``'s findings, each on its cell and line; ``python`` runs the traced program
    (default: the engine's worker interpreter)."""
    path = Path(os.path.abspath(path))
    try:
        data = path.read_bytes()
        cells = read_cells(path)
    except (OSError, NotebookError) as exc:
        return FileResult(str(path), "", findings=[error_at(str(path), 1, str(exc))])
    digest = hashlib.sha256(data).hexdigest()
    program = build(cells, path.name, str(path.parent))
    shadow = program_path(engine.root, path)
    _write(shadow, program.text)
    cmap = CellMap(program, str(shadow), str(path), _relative(path, engine.root))
    wanted = list(checks or engine.config.checks)
    # Each run of the cells repeats their side effects (files written, downloads): the program
    # runs in the worker only for targets it declares (compile_example) or, where the notebook
    # compiles nothing itself, for guessed ones; and under the trace only where it does.
    own = OWN_COMPILE.search(program.text) is not None
    declares = EXAMPLE_DEF.search(program.text.encode()) is not None
    in_worker = wanted if declares or not own else [c for c in wanted if c not in ALL_CHECKS]
    # From the notebook's folder, as its kernel runs it (relative paths are the notebook's).
    result = (
        engine.analyze_file(shadow, in_worker, cwd=str(path.parent))
        if in_worker  # an empty list would mean the configured checks
        else FileResult(str(shadow), digest)
    )
    run = NotebookRun(program.cells, program.code_cells, program.notes, program.left_out)
    out = cmap.result(result, digest, run)
    out.findings += syntax_errors(program, str(path))
    if own and any(c in wanted for c in TRACED_CHECKS):
        traced, reports = _traced(engine, shadow, path.parent, python, on_line)
        out.ran = True
        if any(f.kind is Kind.ERROR for f in out.findings):
            # The analysis already said where the cells stopped; the run stops there too.
            traced = [f for f in traced if f.path != str(shadow) or f.kind is not Kind.ERROR]
        mapped = [cmap.finding(f) for f in traced]
        # What the notebook's own calls showed outranks a zero-config guess at the same place:
        # the guess's inputs were inferred, the run's were the user's.
        confirmed = {_place(f) for f in mapped}
        for rep in out.reports:
            if rep.guess:
                rep.findings = [f for f in rep.findings if _place(f) not in confirmed]
        seen = {f.key() for f in out.all_findings()}
        for g in mapped:
            if g.key() not in seen and _wanted(g, wanted):
                out.findings.append(g)
                seen.add(g.key())
        # The functions the run compiled are targets too (``targets`` lists what ran); their
        # findings are listed once, above.
        ran = cmap.result(FileResult(str(shadow), digest, reports=reports), digest, run)
        out.reports += [dataclasses.replace(r, findings=[]) for r in ran.reports]
    out.findings = dedupe(out.findings)
    return out


def _version(text: str) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", text)
    return (int(m[1]), int(m[2])) if m else (99, 0)


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


def _traced(
    engine: Engine,
    program: Path,
    folder: Path,
    python: str | None,
    on_line: Callable[[str], None] | None,
) -> tuple[list[Finding], list[TargetReport]]:
    """The findings torch's trace records while the program runs from the notebook's folder
    (a kernel started there would run it so), stopped after the analysis's timeout."""
    exe = python or engine.pool.python
    lines: list[str] = []
    traced = TracedRun([exe, str(program)], folder, on_line=on_line or lines.append)
    if _version(traced.torch_version()) < (2, 9):
        # torch before 2.9 records a guard's user line only while its guards log is on: the
        # recompile's line, as the worker gets it (worker/torchcompat.py); output is ours.
        traced.env = {"TORCH_LOGS": "guards"}
    timer = threading.Timer(engine.config.timeout, traced.cancel)
    timer.daemon = True
    timer.start()
    try:
        code = traced.wait()
    finally:
        timer.cancel()
    try:
        provenance = f"the notebook's run at {traced.started}"
        run = trace_results([traced.trace_dir], engine.root, [], provenance)
    finally:
        import shutil

        shutil.rmtree(traced.trace_dir, ignore_errors=True)
    found = [f for r in run.results for f in r.all_findings()]
    reports = [rep for r in run.results for rep in r.reports]
    if traced.cancelled:
        found.append(
            error_at(
                str(program),
                1,
                f"the notebook's run passed the {engine.config.timeout:.0f} s timeout and was "
                "stopped; findings are those of the cells that ran",
            )
        )
    elif code != 0:
        tail = next((ln for ln in reversed(lines) if ln.strip()), "")
        # The traceback's last line in the program: the cell that raised.
        mark = f'File "{program}", line '
        at = [ln.split(mark, 1)[1].split(",")[0] for ln in lines if mark in ln]
        line = int(at[-1]) if at and at[-1].isdigit() else 1
        f = error_at(
            str(program),
            line,
            f"the notebook's run stopped with exit status {code}: {tail[:200]}",
        )
        f.severity = Severity.WARNING
        found.append(f)
    return found, reports
