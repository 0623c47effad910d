"""``dynamo-lens run`` and ``trace``: record a command's structured trace, read it back."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
import time
from pathlib import Path

from ..engine.locate import Workspace
from ..findings import FileResult
from .extract import RunReader
from .paths import PathMap
from .tracelog import ReadStats, read


def record_run(cmd: list[str], root: Path) -> tuple[list[Path], str, int]:
    """Run ``cmd`` as it is, with ``TORCH_TRACE`` set (it reaches subprocesses and every rank
    of a torchrun); its output passes through. (trace folder, provenance, exit code)"""
    trace_dir = Path(tempfile.mkdtemp(prefix="dynamo-lens-run-"))
    env = {**os.environ, "TORCH_TRACE": str(trace_dir)}
    started = time.strftime("%H:%M")
    try:
        code = subprocess.call(cmd, cwd=str(root), env=env)
    except OSError as exc:
        print(f"dynamo-lens: cannot run {cmd[0]}: {exc}")
        code = 127
    return [trace_dir], f'run "{shlex.join(cmd)}" at {started}', code


def trace_results(
    paths: list[Path], root: Path, maps: list[tuple[str, str]], provenance: str
) -> tuple[list[FileResult], ReadStats, RunReader]:
    ws = Workspace(root)
    stats = ReadStats()
    reader = RunReader(ws, PathMap(ws, maps), provenance)
    reader.feed(read(paths, stats))
    return reader.results(), stats, reader


def summary_text(reader: RunReader, root: Path) -> str:
    """The distinct-break table, costliest first, for the text report."""
    rows = reader.summary()
    if not rows:
        return ""
    out = [
        f"Distinct graph breaks ({len(rows)}), by compile time of the frames they broke; "
        f"compile time: Dynamo {reader.dynamo_seconds:.2f} s, "
        f"Inductor {reader.inductor_seconds:.2f} s, {reader.frames_compiled} frame(s)",
    ]
    for r in rows:
        try:
            where = Path(r.path).relative_to(root).as_posix()
        except ValueError:
            where = r.path
        ranks = f", {r.ranks}" if r.ranks else ""
        out.append(
            f"  {where}:{r.line} {r.gb_id or '-'} {r.what}: {r.count}× in {r.frames} frame(s)"
            f"{ranks}, {r.compile_seconds:.2f} s"
        )
    return "\n".join(out)
