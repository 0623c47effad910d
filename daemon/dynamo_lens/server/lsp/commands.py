"""workspace/executeCommand: the ``dynamoLens.server.*`` commands (docs/lsp-contract.md).

Arguments are typed: pygls structures each one from its annotation and answers a malformed
call with InvalidParams. Long commands run on pygls's thread pool.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from ...engine.cancel import CancelToken
from ..summary import benchmark_result, timing_table
from .app import CMD, DynamoLensServer, server
from .convert import path_to_uri, uri_to_path


def _path(uri: str) -> str:
    path = uri_to_path(uri)
    if path is None:
        raise ValueError(f"not a file URI: {uri}")
    return path


@server.command(CMD + "checkFile")
@server.thread()
def check_file(ls: DynamoLensServer, uri: str) -> dict[str, Any]:
    path = _path(uri)
    svc = ls.svc()
    if not svc.workspace.contains(path) and not ls.is_open(uri):
        # Running a file is the user's request about their code: a workspace file, or one
        # they have open in the editor. Never an arbitrary path from the wire.
        raise JsonRpcInvalidParams(f"not in the workspace and not open in the editor: {path}")
    res = svc.check_now(path)
    if res is None:
        return {"uri": uri, "targets": 0, "findings": 0, "restricted": True}
    return {"uri": uri, "targets": len(res.reports), "findings": len(res.all_findings())}


@server.command(CMD + "checkWorkspace")
@server.thread()
def check_workspace(ls: DynamoLensServer) -> dict[str, Any]:
    files, findings = ls.svc().check_workspace()
    return {"files": files, "findings": findings}


@server.command(CMD + "listTargets")
@server.thread()
def list_targets(ls: DynamoLensServer, *uris: str) -> list[dict[str, Any]]:
    reports = ls.svc().targets([_path(str(u)) for u in uris])
    return [
        {"target": r.target, "uri": path_to_uri(r.path), "line": r.line, "kind": r.kind}
        for r in reports
    ]


@server.command(CMD + "environment")
@server.thread()
def environment(ls: DynamoLensServer) -> dict[str, Any]:
    return ls.svc().environment_summary()


@server.command(CMD + "clearCache")
@server.thread()
def clear_cache(ls: DynamoLensServer) -> dict[str, Any]:
    return {"removed": ls.svc().clear_cache()}


@server.command(CMD + "loadTrace")
@server.thread()
def load_trace(ls: DynamoLensServer, path: str) -> dict[str, Any]:
    """Findings from a run's TORCH_TRACE folder (or one log). Parsing only: allowed untrusted."""
    p = Path(path)
    if not p.exists():
        raise JsonRpcInvalidParams(f"no such trace folder or file: {path}")
    return ls.svc().load_run([p], f"trace {p.name}")


@server.command(CMD + "openDocs")
def open_docs(ls: DynamoLensServer, url: str) -> None:
    if url.startswith("https://"):
        ls.window_show_document(types.ShowDocumentParams(uri=url, external=True))


@dataclass
class BenchmarkArgs:
    uri: str
    target: str
    devices: list[str] | None = None
    mode: str | None = None
    dynamic: bool | None = None
    workDoneToken: str | int | None = None


@server.command(CMD + "benchmark")
@server.thread()
def benchmark(ls: DynamoLensServer, req: BenchmarkArgs) -> dict[str, Any]:
    token = req.workDoneToken
    cancel = CancelToken()
    progress = ls.work_done_progress
    n = max(len(req.devices or ["cpu"]), 1)
    timed = 0

    def send(kind: str, value: Any) -> None:
        if token is not None:
            ls.on_loop_wait(lambda: getattr(progress, kind)(token, value))

    def on_progress(msg: dict[str, Any]) -> None:
        nonlocal timed
        if msg.get("stage") == "timings":
            timed += 1
            pct = min(95, int(100 * (timed - 0.5) / n))
            text = f"timing on {msg.get('device')}"
            send("report", types.WorkDoneProgressReport(message=text, percentage=pct))

    begin = types.WorkDoneProgressBegin(
        title="Dynamo Lens: benchmark", cancellable=True, message=req.target, percentage=0
    )
    send("begin", begin)
    if token is not None:
        # pygls cancels this future when the client cancels the token.
        future: Future[Any] | None = progress.tokens.get(token)
        if future is not None:
            future.add_done_callback(lambda f: cancel.cancel() if f.cancelled() else None)
    try:
        report = ls.svc().benchmark(
            _path(req.uri),
            req.target,
            devices=req.devices or None,
            mode=req.mode,
            dynamic=req.dynamic,
            cancel=cancel,
            on_progress=on_progress,
        )
    finally:
        if token is not None:
            progress.tokens.pop(token, None)
    if report is None:
        send("end", types.WorkDoneProgressEnd(message="cancelled"))
        return {"cancelled": True, "target": req.target}
    send("end", types.WorkDoneProgressEnd(message="done"))
    ls.log_line(f"benchmark {report.target}:\n{timing_table(report)}")
    return benchmark_result(report, req.uri)
