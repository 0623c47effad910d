"""workspace/executeCommand: the ``dynamoLens.server.*`` commands (docs/lsp-contract.md).

Arguments are typed: pygls structures each one from its annotation and answers a malformed
call with InvalidParams. Commands run on the daemon's own command threads (``background``),
never on pygls's pool: that pool also reads the LSP stream, and commands that run for minutes
(a traced run, a benchmark, a big trace) must not keep a hover or a cancel from being read.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shlex
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from ...engine.cancel import CancelToken
from ...runs.tracelog import printable
from .. import verdicts
from ..summary import benchmark_result, timing_table
from .app import CMD, DynamoLensServer, server
from .convert import path_to_uri, rewrite_edit, uri_to_path

F = TypeVar("F", bound=Callable[..., Any])


def background(fn: F) -> F:
    """Run the command on the daemon's command threads; the event loop awaits it."""

    @functools.wraps(fn)
    async def handler(ls: DynamoLensServer, *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(ls.commands, functools.partial(fn, ls, *args))

    return handler  # type: ignore[return-value]


def _path(uri: str) -> str:
    path = uri_to_path(uri)
    if path is None:
        raise ValueError(f"not a file URI: {uri}")
    return path


@server.command(CMD + "checkFile")
@background
def check_file(ls: DynamoLensServer, uri: str) -> dict[str, Any]:
    path = _path(uri)
    svc = ls.svc()
    if not svc.ctx.workspace.contains(path) and not ls.is_open(uri):
        # Running a file is the user's request about their code: a workspace file, or one
        # they have open in the editor. Never an arbitrary path from the wire.
        raise JsonRpcInvalidParams(f"not in the workspace and not open in the editor: {path}")
    res = svc.analyses.check_now(path)
    if res is None:
        return {"uri": uri, "targets": 0, "findings": 0, "restricted": True}
    return {"uri": uri, "targets": len(res.reports), "findings": len(res.all_findings())}


@server.command(CMD + "checkWorkspace")
@background
def check_workspace(ls: DynamoLensServer) -> dict[str, Any]:
    files, findings = ls.svc().analyses.check_workspace()
    return {"files": files, "findings": findings}


@server.command(CMD + "listTargets")
@background
def list_targets(ls: DynamoLensServer, *uris: str) -> list[dict[str, Any]]:
    reports = ls.svc().analyses.targets([_path(str(u)) for u in uris])
    return [
        {"target": r.target, "uri": path_to_uri(r.path), "line": r.line, "kind": r.kind}
        for r in reports
    ]


@server.command(CMD + "environment")
@background
def environment(ls: DynamoLensServer) -> dict[str, Any]:
    return ls.svc().queries.environment()


@server.command(CMD + "clearCache")
@background
def clear_cache(ls: DynamoLensServer) -> dict[str, Any]:
    return {"removed": ls.svc().ctx.cache.clear()}


@server.command(CMD + "loadTrace")
@background
def load_trace(ls: DynamoLensServer, path: str) -> dict[str, Any]:
    """Findings from a run's TORCH_TRACE folder (or one log). Parsing only: allowed untrusted.
    A relative path is the workspace's, never the daemon's working directory."""
    svc = ls.svc()
    if not path.strip():
        raise JsonRpcInvalidParams("loadTrace wants the path of a trace folder or log file")
    p = Path(os.path.normpath(svc.root / path))  # an absolute path stays itself
    if not p.exists():
        raise JsonRpcInvalidParams(f"no such trace folder or file: {path}")
    where = p.relative_to(svc.root) if p.is_relative_to(svc.root) else p
    return svc.last_run.load([p], f"trace {printable(where)}")


@server.command(CMD + "openDocs")
def open_docs(ls: DynamoLensServer, url: str) -> None:
    if url.startswith("https://"):
        ls.window_show_document(types.ShowDocumentParams(uri=url, external=True))


class _Progress:
    """Work-done progress on the token the client sent with its request (none: silent), and
    the client's cancel of it: pygls cancels the token's future when the client does."""

    def __init__(self, ls: DynamoLensServer, token: str | int | None) -> None:
        self.ls, self.token = ls, token

    def send(self, kind: str, value: Any) -> None:
        if self.token is not None:
            progress = self.ls.work_done_progress
            self.ls.on_loop_wait(lambda: getattr(progress, kind)(self.token, value))

    def begin(self, title: str, message: str, on_cancel: Callable[[], None]) -> None:
        self.send(
            "begin",
            types.WorkDoneProgressBegin(
                title=title, cancellable=True, message=message, percentage=0
            ),
        )
        if self.token is not None:
            future: Future[Any] | None = self.ls.work_done_progress.tokens.get(self.token)
            if future is not None:
                future.add_done_callback(lambda f: on_cancel() if f.cancelled() else None)

    def report(self, message: str, percentage: int | None = None) -> None:
        self.send("report", types.WorkDoneProgressReport(message=message, percentage=percentage))

    def end(self, message: str) -> None:
        if self.token is not None:
            self.ls.work_done_progress.tokens.pop(self.token, None)
        self.send("end", types.WorkDoneProgressEnd(message=message))


@dataclass
class BenchmarkArgs:
    uri: str
    target: str
    devices: list[str] | None = None
    mode: str | None = None
    dynamic: bool | None = None
    workDoneToken: str | int | None = None


@server.command(CMD + "benchmark")
@background
def benchmark(ls: DynamoLensServer, req: BenchmarkArgs) -> dict[str, Any]:
    cancel = CancelToken()
    progress = _Progress(ls, req.workDoneToken)
    n = max(len(req.devices or ["cpu"]), 1)
    timed = 0

    def on_progress(msg: dict[str, Any]) -> None:
        nonlocal timed
        if msg.get("stage") == "timings":
            timed += 1
            pct = min(95, int(100 * (timed - 0.5) / n))
            progress.report(f"timing on {msg.get('device')}", pct)

    progress.begin("Dynamo Lens: benchmark", req.target, cancel.cancel)
    try:
        report = ls.svc().analyses.benchmark(
            _path(req.uri),
            req.target,
            devices=req.devices or None,
            mode=req.mode,
            dynamic=req.dynamic,
            cancel=cancel,
            on_progress=on_progress,
        )
    except BaseException:
        progress.end("failed")
        raise
    if report is None:
        progress.end("cancelled")
        return {"cancelled": True, "target": req.target}
    progress.end("done")
    ls.log_line(f"benchmark {report.target}:\n{timing_table(report)}")
    return benchmark_result(report, req.uri)


@dataclass
class VerifyFixArgs:
    uri: str
    line: int  # 1-based line of the break
    target: str
    gbType: str
    rule: str
    workDoneToken: str | int | None = None


@server.command(CMD + "verifyFix")
@background
def verify_fix(ls: DynamoLensServer, req: VerifyFixArgs) -> dict[str, Any]:
    """Runs the rewrite of the break in the worker (worker/verify.py); verified, it is applied
    to the buffer it was proposed for, else the user is told which check failed. The rewrite is
    the catalogue's for the saved file, never text from the wire."""
    svc = ls.svc()
    path = _path(req.uri)
    text, version = ls.doc_text(req.uri)
    found = [
        p
        for p in svc.verdicts.proposals(path, text, req.line, req.target, req.gbType)
        if p.rewrite.rule == req.rule
    ]
    if not found:
        raise JsonRpcInvalidParams(
            f"no {req.rule} rewrite for line {req.line} of {os.path.basename(path)} as saved"
        )
    p = found[0]
    cancel = CancelToken()
    # A code action's command comes without a token: the server makes one to show progress.
    progress = _Progress(ls, req.workDoneToken or ls.progress_token("verify-fix"))
    progress.begin("Dynamo Lens: verifying a fix", p.rewrite.title, cancel.cancel)
    try:
        verdict = svc.verdicts.verify(p.rewrite, p.target, p.site, cancel=cancel)
    except BaseException:
        progress.end("failed")
        raise
    result: dict[str, Any] = {**verdict, "rule": req.rule, "applied": False}
    if verdict.get("cancelled"):
        progress.end("cancelled")
        return result
    if not verdict["verified"]:
        progress.end("rejected")
        ls.warn(f"Dynamo Lens: {p.rewrite.title}: not applied, {verdicts.failed(verdict)}")
        return result
    progress.end("verified")
    if not verdicts.applicable(verdict):
        # Equal on the example only: offered as an explicit, labelled choice, never applied.
        ls.warn(f"Dynamo Lens: {p.rewrite.title}: {verdicts.shown(verdict)}: not applied")
        return result
    now, now_version = ls.doc_text(req.uri)
    if now != text or now_version != version:
        ls.warn(f"Dynamo Lens: {p.rewrite.title}: verified, but the file changed: not applied")
        return result
    edit = rewrite_edit(req.uri, p.rewrite, text, version)
    params = types.ApplyWorkspaceEditParams(edit=edit, label=p.rewrite.title)
    result["applied"] = ls.apply_edit(params)
    return result


_MAX_LOG_LINES = 5000


@dataclass
class RunArgs:
    uri: str | None = None  # the file to run (the active editor's)
    command: str | None = None  # dynamoLens.runCommand: a command line, ${file} for the file
    workDoneToken: str | int | None = None


@server.command(CMD + "runFile")
@background
def run_file(ls: DynamoLensServer, req: RunArgs) -> dict[str, Any]:
    """Runs the file (or the configured command) with torch's structured trace on; its output
    goes to the log, its last line to the progress; cancel stops its whole process group."""
    svc = ls.svc()
    path = _path(req.uri) if req.uri else None
    if path is not None and not svc.ctx.workspace.contains(path) and not ls.is_open(req.uri or ""):
        raise JsonRpcInvalidParams(f"not in the workspace and not open in the editor: {path}")
    try:
        argv = svc.last_run.argv(path, req.command)
    except ValueError as exc:
        raise JsonRpcInvalidParams(str(exc)) from exc
    progress = _Progress(ls, req.workDoneToken)
    last = 0.0
    lines = 0

    def on_line(line: str) -> None:
        nonlocal last, lines
        lines += 1
        # A chatty script must not flood the client: the log takes the first lines (the rest
        # is counted), the progress one line every 0.3 s.
        if lines <= _MAX_LOG_LINES:
            ls.log_line(line[:2000])
        elif lines == _MAX_LOG_LINES + 1:
            ls.log_line(f"… more output not shown (over {_MAX_LOG_LINES} lines)")
        if time.monotonic() - last > 0.3:
            last = time.monotonic()
            progress.report(line[:120])

    run = svc.last_run.start(argv, on_line)
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


# The view lists the costliest breaks; a trace with thousands is summed up, not sent whole.
_MAX_SUMMARY_ROWS = 500


@server.command(CMD + "runSummary")
@background
def run_summary(ls: DynamoLensServer) -> dict[str, Any] | None:
    """The last run's distinct-break summary and its compiled functions, each costliest first
    (the editor's two tree views)."""
    run = ls.svc().last_run.run
    if run is None:
        return None
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
        "rowsNotShown": max(len(run.summary) - _MAX_SUMMARY_ROWS, 0),
        "rows": [
            {
                "uri": path_to_uri(r.path),
                "line": r.line,
                "gbId": r.gb_id,
                "what": r.what,
                "count": r.count,
                "frames": r.frames,
                "ranks": r.ranks,
                "compileSeconds": r.compile_seconds,
            }
            for r in run.summary[:_MAX_SUMMARY_ROWS]
        ],
        "functionsNotShown": max(len(functions) - _MAX_SUMMARY_ROWS, 0),
        "functions": [
            {
                "uri": path_to_uri(f.path),
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
            for f in functions[:_MAX_SUMMARY_ROWS]
        ],
    }


@server.command(CMD + "clearRun")
@background
def clear_run(ls: DynamoLensServer) -> dict[str, Any]:
    return {"files": ls.svc().last_run.clear()}
