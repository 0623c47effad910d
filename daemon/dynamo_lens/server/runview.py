"""What the editor shows of a run: its output as it runs (the log takes the first lines, the
progress one line now and then) and the last run's summary, costliest first and capped. Plain
values with file paths; the LSP edge turns paths into URIs and sends them. Knows nothing of LSP.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..runs.loaded import LoadedRun

# A chatty script must not flood the client: the log takes this many lines, the rest counted.
MAX_LOG_LINES = 5000
# The progress shows one line at most this often (seconds).
PROGRESS_EVERY = 0.3
# The view lists the costliest breaks; a trace with thousands is summed up, not sent whole.
MAX_SUMMARY_ROWS = 500


class Output:
    """A run's output lines, passed on to ``log`` (cut to 2000 characters, the first
    ``MAX_LOG_LINES``, then one line saying more was not shown) and to ``progress`` (one line,
    cut to 120 characters, every ``PROGRESS_EVERY`` seconds)."""

    def __init__(self, log: Callable[[str], None], progress: Callable[[str], None]) -> None:
        self._log, self._progress = log, progress
        self._last = 0.0
        self.lines = 0

    def __call__(self, line: str) -> None:
        self.lines += 1
        if self.lines <= MAX_LOG_LINES:
            self._log(line[:2000])
        elif self.lines == MAX_LOG_LINES + 1:
            self._log(f"… more output not shown (over {MAX_LOG_LINES} lines)")
        if time.monotonic() - self._last > PROGRESS_EVERY:
            self._last = time.monotonic()
            self._progress(line[:120])


def summary(run: LoadedRun) -> dict[str, Any]:
    """The run's distinct-break summary and its compiled functions, each costliest first and
    at most ``MAX_SUMMARY_ROWS`` (how many were left out is said): the editor's two tree views.
    Rows name files by ``path``."""
    functions = run.functions()
    return {
        "provenance": run.provenance,
        "loadedAt": run.loaded_at,
        "exitCode": run.exit_code,
        "cancelled": run.cancelled,
        "torch": run.torch or None,
        "dynamoSeconds": run.dynamo_seconds,
        "inductorSeconds": run.inductor_seconds,
        "framesCompiled": run.frames_compiled,
        "skipped": run.skipped,
        "rowsNotShown": max(len(run.summary) - MAX_SUMMARY_ROWS, 0),
        "rows": [
            {
                "path": r.path,
                "line": r.line,
                "gbId": r.gb_id,
                "what": r.what,
                "count": r.count,
                "frames": r.frames,
                "ranks": r.ranks,
                "compileSeconds": r.compile_seconds,
            }
            for r in run.summary[:MAX_SUMMARY_ROWS]
        ],
        "functionsNotShown": max(len(functions) - MAX_SUMMARY_ROWS, 0),
        "functions": [
            {
                "path": f.path,
                "line": f.line,
                "name": f.target.rsplit("::", 1)[-1].split("@", 1)[0],
                "library": f.environment.get("library"),
                "seconds": f.environment.get("compile_seconds", 0.0),
                "dynamoSeconds": f.environment.get("dynamo_seconds", 0.0),
                "inductorSeconds": f.environment.get("inductor_seconds", 0.0),
                "compiles": f.environment.get("compiles", 0),
                "graphs": f.graph_count,
                "breaks": f.break_count,
                "recompiles": f.recompile_count,
            }
            for f in functions[:MAX_SUMMARY_ROWS]
        ],
    }
