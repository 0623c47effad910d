"""Commands about runs: run a file (or the configured command) with torch's structured trace,
load a trace, the last run's summary, clear it."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from ...runview import Output, summary
from ..app import CMD, DynamoLensServer
from ..convert import path_to_uri
from .kit import Progress, background, file_path, invalid_params


def load_trace(ls: DynamoLensServer, path: str) -> dict[str, Any]:
    """Findings from a run's TORCH_TRACE folder (or one log). Parsing only: allowed untrusted."""
    with invalid_params():
        return ls.svc().last_run.load_named(path)


@dataclass
class RunArgs:
    uri: str | None = None  # the file to run (the active editor's)
    command: str | None = None  # dynamoLens.runCommand: a command line, ${file} for the file
    workDoneToken: str | int | None = None


def run_file(ls: DynamoLensServer, req: RunArgs) -> dict[str, Any]:
    """Runs the file (or the configured command) with torch's structured trace on; its output
    goes to the log, its last line to the progress; cancel stops its whole process group."""
    svc = ls.svc()
    path = file_path(req.uri) if req.uri else None
    with invalid_params():
        if path is not None:
            svc.may_run(path, ls.is_open(req.uri or ""))
        argv = svc.last_run.argv(path, req.command)
    progress = Progress(ls, req.workDoneToken)
    run = svc.last_run.start(argv, Output(ls.log_line, progress.report))
    ls.log_line(f"{run.provenance}: {argv}")
    progress.begin("Dynamo Lens: run with analysis", shlex.join(argv), run.cancel)
    ls.runs.add(run)  # a daemon that leaves stops its runs
    try:
        code = run.wait()
        progress.report("reading the trace")
        # Into the service running now: a settings change may have replaced the one it began in.
        result = ls.svc().last_run.finish(run, code)
    except BaseException:
        progress.end("failed")
        raise
    finally:
        ls.runs.discard(run)
    progress.end("cancelled" if run.cancelled else f"exit code {code}")
    return result


def run_summary(ls: DynamoLensServer) -> dict[str, Any] | None:
    """The last run's summary (server/runview.py), its files as URIs."""
    run = ls.svc().last_run.run
    if run is None:
        return None
    out = summary(run)
    for row in [*out["rows"], *out["functions"]]:
        row["uri"] = path_to_uri(row.pop("path"))
    return out


def clear_run(ls: DynamoLensServer) -> dict[str, Any]:
    return {"files": ls.svc().last_run.clear()}


def register(ls: DynamoLensServer) -> None:
    ls.command(CMD + "loadTrace")(background(load_trace))
    ls.command(CMD + "runFile")(background(run_file))
    ls.command(CMD + "runSummary")(background(run_summary))
    ls.command(CMD + "clearRun")(background(clear_run))
