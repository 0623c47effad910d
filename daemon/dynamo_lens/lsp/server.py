"""The language server: LSP in, ``AnalysisService`` calls out, lsprotocol types back.

This module only translates. It never imports torch: ``initialize`` answers at once and the
worker warms up in the background.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from .. import __version__, fixes
from ..config import Config, apply, load
from ..findings import Finding
from ..service import AnalysisService
from ..summary import hover_markdown, timing_rows, timing_table
from ..watcher import Watcher
from ..workerpool import CancelToken
from .convert import code_lens, diagnostic, path_to_uri, uri_to_path

log = logging.getLogger(__name__)
STATUS = "dynamoLens/status"
CMD = "dynamoLens.server."


class _Protocol(LanguageServerProtocol):
    """Adds the request's workDoneToken to a command's arguments, and routes the client's
    cancel of such a token to the running job."""

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams) -> Any:
        if params.work_done_token is not None and params.arguments:
            first = params.arguments[0]
            if isinstance(first, dict):
                first.setdefault("workDoneToken", params.work_done_token)
        return (yield from super().lsp_workspace__execute_command(params))

    @lsp_method(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def lsp_work_done_progress_cancel(self, params: types.WorkDoneProgressCancelParams) -> None:
        server = self._server
        if isinstance(server, DynamoLensServer) and server.cancel_token(params.token):
            return
        super().lsp_work_done_progress_cancel(params)


class DynamoLensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("dynamo-lens", __version__, protocol_cls=_Protocol)
        self.service: AnalysisService | None = None
        self.settings: dict[str, Any] = {}
        self.trusted = True
        self.root = Path.cwd()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.watcher: Watcher | None = None
        self._tokens: dict[str | int, CancelToken] = {}
        self._config_problems: list[str] = []
        self.started = threading.Event()

    # -- plumbing ----------------------------------------------------------------------------
    def on_loop(self, fn: Callable[[], None]) -> None:
        """Send from the event loop's thread: the writer is not shared across threads."""
        if self.loop is not None and self.loop.is_running():
            self.loop.call_soon_threadsafe(fn)
        else:
            fn()

    def on_loop_wait(self, fn: Callable[[], None], timeout: float = 5.0) -> None:
        """Like ``on_loop`` but returns once sent, so what follows (a response) comes after."""
        if self.loop is None or not self.loop.is_running():
            fn()
            return
        done = threading.Event()

        def run() -> None:
            try:
                fn()
            finally:
                done.set()

        self.loop.call_soon_threadsafe(run)
        done.wait(timeout)

    def publish(self, path: str, findings: list[Finding], version: int | None) -> None:
        params = types.PublishDiagnosticsParams(
            uri=path_to_uri(path), diagnostics=[diagnostic(f) for f in findings], version=version
        )
        self.on_loop(lambda: self.text_document_publish_diagnostics(params))

    def status(self, payload: dict[str, Any]) -> None:
        self.on_loop(lambda: self.protocol.notify(STATUS, payload))

    def log_line(self, text: str) -> None:
        params = types.LogMessageParams(type=types.MessageType.Log, message=text)
        self.on_loop(lambda: self.window_log_message(params))

    def warn(self, text: str) -> None:
        params = types.ShowMessageParams(type=types.MessageType.Warning, message=text)
        self.on_loop(lambda: self.window_show_message(params))

    def cancel_token(self, token: str | int) -> bool:
        t = self._tokens.get(token)
        if t is None:
            return False
        t.cancel()
        return True

    def config(self) -> Config:
        cfg, problems = load(self.root)
        cfg, more = apply(cfg, self.settings, "dynamoLens settings")
        for p in problems + more:
            if p not in self._config_problems:
                self.warn(f"Dynamo Lens: {p}")
        self._config_problems = problems + more
        return cfg

    def start_service(self) -> None:
        if self.service is not None:
            self.service.close()
        if self.watcher is not None:
            self.watcher.stop()
        cfg = self.config()
        self.service = AnalysisService(
            self.root,
            cfg,
            trusted=self.trusted,
            publish=self.publish,
            status=self.status,
            log=self.log_line,
        )
        self.service.start()
        if self.trusted:
            svc = self.service
            self.watcher = Watcher(self.root, cfg.excludes, svc.disk_changed)
            self.watcher.start()
        for doc in list(self.workspace.text_documents.values()):
            self.service.open(uri_to_path(doc.uri), doc.source, doc.version)
        self.started.set()

    def doc_text(self, uri: str) -> tuple[str, int | None]:
        doc = self.workspace.get_text_document(uri)
        return doc.source, doc.version


server = DynamoLensServer()


def _svc(ls: DynamoLensServer) -> AnalysisService:
    # Commands can arrive before `initialized` has been handled: wait for the service.
    if not ls.started.wait(30) or ls.service is None:
        raise RuntimeError("the server is not initialized")
    return ls.service


@server.feature(types.INITIALIZE)
def on_initialize(ls: DynamoLensServer, params: types.InitializeParams) -> None:
    opts = params.initialization_options if isinstance(params.initialization_options, dict) else {}
    ls.trusted = bool(opts.get("trusted", True))
    settings = opts.get("settings")
    ls.settings = settings if isinstance(settings, dict) else {}
    if params.workspace_folders:
        ls.root = Path(uri_to_path(params.workspace_folders[0].uri))
    elif params.root_uri:
        ls.root = Path(uri_to_path(params.root_uri))


@server.feature(types.INITIALIZED)
async def on_initialized(ls: DynamoLensServer, params: types.InitializedParams) -> None:
    ls.loop = asyncio.get_running_loop()
    await _pull_settings(ls)
    ls.start_service()


async def _pull_settings(ls: DynamoLensServer) -> None:
    caps = ls.client_capabilities.workspace
    if caps is None or not caps.configuration:
        return
    try:
        result = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section="dynamoLens")])
        )
    except Exception as exc:  # a client that cannot answer keeps the init options
        log.warning("workspace/configuration failed: %s", exc)
        return
    if result and isinstance(result[0], dict):
        ls.settings = {**ls.settings, **result[0]}


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def on_config(ls: DynamoLensServer, params: types.DidChangeConfigurationParams) -> None:
    if isinstance(params.settings, dict) and isinstance(params.settings.get("dynamoLens"), dict):
        ls.settings = {**ls.settings, **params.settings["dynamoLens"]}
    await _pull_settings(ls)
    ls.start_service()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: DynamoLensServer, params: types.DidOpenTextDocumentParams) -> None:
    if params.text_document.language_id not in ("python", "") or ls.service is None:
        return
    d = params.text_document
    ls.service.open(uri_to_path(d.uri), d.text, d.version)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: DynamoLensServer, params: types.DidChangeTextDocumentParams) -> None:
    if ls.service is None:
        return
    text, version = ls.doc_text(params.text_document.uri)
    ls.service.change(uri_to_path(params.text_document.uri), text, version)


@server.feature(
    types.TEXT_DOCUMENT_DID_SAVE, types.TextDocumentSaveRegistrationOptions(include_text=False)
)
def did_save(ls: DynamoLensServer, params: types.DidSaveTextDocumentParams) -> None:
    if ls.service is None:
        return
    text, version = ls.doc_text(params.text_document.uri)
    ls.service.save(uri_to_path(params.text_document.uri), text, version)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: DynamoLensServer, params: types.DidCloseTextDocumentParams) -> None:
    if ls.service is not None:
        ls.service.close_doc(uri_to_path(params.text_document.uri))


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: DynamoLensServer, params: types.HoverParams) -> types.Hover | None:
    if ls.service is None:
        return None
    path = uri_to_path(params.text_document.uri)
    line = params.position.line + 1
    svc = ls.service
    doc = svc.docs.get(path)
    reports = svc.reports_for(path)
    flagged = [f for f in (doc.visible() if doc else []) if f.line <= line <= f.end_line]
    report = next((r for r in reports if r.line == line), None)
    if report is None and flagged:
        report = next((r for r in reports if r.target == flagged[0].target), None)
    if report is None:
        # A flagged line in a helper file: the target lives in another file's results.
        for other in svc.docs.values():
            for r in other.result.reports if other.result else []:
                if flagged and r.target == flagged[0].target:
                    report = r
    if report is None:
        return None
    parts = [f"**{f.severity.value}**: {f.message}" for f in flagged]
    parts.append(hover_markdown(report, stale=svc.is_stale(path)))
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n".join(parts))
    )


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
def lenses(ls: DynamoLensServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    if ls.service is None:
        return []
    path = uri_to_path(params.text_document.uri)
    out: list[types.CodeLens] = []
    for r in ls.service.reports_for(path):
        if r.path == path:
            out += code_lens(r, params.text_document.uri)
    return out


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
)
def code_actions(ls: DynamoLensServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    text, _ = ls.doc_text(uri)
    actions: list[types.CodeAction] = []
    for d in params.context.diagnostics:
        if d.source != "dynamo-lens" or not isinstance(d.data, dict):
            continue
        if d.data.get("doc_url"):
            actions.append(
                types.CodeAction(
                    title=f"Open the graph-break documentation ({d.code})",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[d],
                    command=types.Command(
                        title="Open documentation",
                        command=CMD + "openDocs",
                        arguments=[d.data["doc_url"]],
                    ),
                )
            )
        md = d.data.get("mark_dynamic")
        if isinstance(md, dict):
            edit = _mark_dynamic_edit(ls, d, md)
            if edit is not None:
                actions.append(edit)
    for name, line in fixes.module_classes_without_example(text):
        if params.range.start.line <= line - 1 <= params.range.end.line:
            edit_ = fixes.add_compile_example(text, name)
            if edit_ is not None:
                actions.append(_insert_action(uri, f"Add a compile_example for {name}", edit_))
    return actions


def _insert_action(uri: str, title: str, edit: fixes.Edit) -> types.CodeAction:
    pos = types.Position(line=edit.line - 1, character=0)
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        edit=types.WorkspaceEdit(
            changes={
                uri: [types.TextEdit(range=types.Range(start=pos, end=pos), new_text=edit.text)]
            }
        ),
    )


def _mark_dynamic_edit(
    ls: DynamoLensServer, d: types.Diagnostic, md: dict[str, Any]
) -> types.CodeAction | None:
    """Insert mark_dynamic where the example builds the call (the call site we ran)."""
    if ls.service is None:
        return None
    target = d.data.get("target") if isinstance(d.data, dict) else None
    for doc in ls.service.docs.values():
        for r in doc.result.reports if doc.result else []:
            if r.target != target:
                continue
            example_file = doc.path
            try:
                text = Path(example_file).read_text()
            except OSError:
                return None
            params = [s.split(":", 1)[0] for s in r.input_shapes]
            var = str(md.get("variable", ""))
            idx = params.index(var) if var in params else 0
            example = r.target.split("::", 1)[-1].split("[", 1)[0]
            edit = fixes.mark_dynamic(text, idx, int(md.get("dim", 0)), example)
            if edit is None:
                return None
            action = _insert_action(
                path_to_uri(example_file),
                f"Insert torch._dynamo.mark_dynamic(…, {md.get('dim', 0)}) at the call site",
                edit,
            )
            action.diagnostics = [d]
            return action
    return None


# -- commands -----------------------------------------------------------------------------


@server.command(CMD + "checkFile")
@server.thread()
def cmd_check_file(ls: DynamoLensServer, *args: Any) -> dict[str, Any]:
    if not args or not isinstance(args[0], str):
        raise ValueError("checkFile takes [uri]")
    path = uri_to_path(args[0])
    res = _svc(ls).check_now(path)
    if res is None:
        return {"uri": args[0], "targets": 0, "findings": 0, "restricted": True}
    return {"uri": args[0], "targets": len(res.reports), "findings": len(res.all_findings())}


@server.command(CMD + "checkWorkspace")
@server.thread()
def cmd_check_workspace(ls: DynamoLensServer, *args: Any) -> dict[str, Any]:
    svc = _svc(ls)
    files = findings = 0
    for p in svc.workspace_files():
        res = svc.check_now(str(p))
        if res is not None and res.ran:
            files += 1
            findings += len(res.all_findings())
    return {"files": files, "findings": findings}


@server.command(CMD + "listTargets")
@server.thread()
def cmd_list_targets(ls: DynamoLensServer, *args: Any) -> list[dict[str, Any]]:
    svc = _svc(ls)
    paths = [uri_to_path(args[0])] if args and isinstance(args[0], str) else list(svc.docs)
    out = []
    for p in paths:
        if p not in svc.docs or svc.docs[p].result is None:
            svc.check_now(p)
        for r in svc.reports_for(p):
            out.append({"target": r.target, "uri": path_to_uri(p), "line": r.line, "kind": r.kind})
    return out


@server.command(CMD + "environment")
@server.thread()
def cmd_environment(ls: DynamoLensServer, *args: Any) -> dict[str, Any]:
    svc = _svc(ls)
    env = svc.engine.environment() if svc.engine is not None else {}
    return {
        "torch": env.get("torch"),
        "devices": env.get("devices", []),
        "python": env.get("python"),
        "backend": svc.config.backend,
        "trusted": ls.trusted,
    }


@server.command(CMD + "clearCache")
@server.thread()
def cmd_clear_cache(ls: DynamoLensServer, *args: Any) -> dict[str, Any]:
    return {"removed": _svc(ls).clear_cache()}


@server.command(CMD + "openDocs")
def cmd_open_docs(ls: DynamoLensServer, *args: Any) -> None:
    if args and isinstance(args[0], str) and args[0].startswith("https://"):
        ls.window_show_document(types.ShowDocumentParams(uri=args[0], external=True))


@server.command(CMD + "benchmark")
@server.thread()
def cmd_benchmark(ls: DynamoLensServer, *args: Any) -> dict[str, Any]:
    if not args or not isinstance(args[0], dict) or "uri" not in args[0] or "target" not in args[0]:
        raise ValueError("benchmark takes [{uri, target, devices?, mode?, dynamic?}]")
    req = args[0]
    token = req.get("workDoneToken")
    cancel = CancelToken()
    if token is not None:
        ls._tokens[token] = cancel

    def progress(kind: str, **kw: Any) -> None:
        if token is None:
            return
        value: Any
        if kind == "begin":
            value = types.WorkDoneProgressBegin(
                title="Dynamo Lens: benchmark", cancellable=True, **kw
            )
        elif kind == "report":
            value = types.WorkDoneProgressReport(cancellable=True, **kw)
        else:
            value = types.WorkDoneProgressEnd(**kw)
        wdp = ls.work_done_progress
        fn: Callable[[Any, Any], None] = getattr(wdp, kind)
        ls.on_loop_wait(lambda: fn(token, value))

    devices = req.get("devices") or None
    n = max(len(devices or ["cpu"]), 1)
    steps = {"count": 0}

    def on_progress(msg: dict[str, Any]) -> None:
        if msg.get("stage") == "timings":
            steps["count"] += 1
            pct = min(95, int(100 * (steps["count"] - 0.5) / n))
            progress("report", message=f"timing on {msg.get('device')}", percentage=pct)

    progress("begin", message=f"{req['target']}", percentage=0)
    try:
        report = _svc(ls).benchmark(
            uri_to_path(req["uri"]),
            str(req["target"]),
            devices=devices,
            mode=req.get("mode"),
            dynamic=req.get("dynamic"),
            cancel=cancel,
            on_progress=on_progress,
        )
    finally:
        ls._tokens.pop(token, None) if token is not None else None
    if report is None:
        progress("end", message="cancelled")
        return {"cancelled": True, "target": req["target"]}
    rows = timing_rows(report)
    table = timing_table(report)
    progress("end", message="done")
    ls.log_line(f"benchmark {report.target}:\n{table}")
    env = report.environment
    return {
        "target": report.target,
        "uri": req["uri"],
        "environment": {
            "torch": env.get("torch"),
            "python": env.get("python"),
            "backend": env.get("backend"),
            "mode": env.get("mode"),
            "dynamic": env.get("dynamic"),
        },
        "input_shapes": report.input_shapes,
        "small_inputs": any(r["small_inputs"] for r in rows),
        "rows": rows,
        "markdown": table,
    }


def serve(tcp: str | None = None) -> None:
    if tcp:
        host, _, port = tcp.rpartition(":")
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise SystemExit("--tcp is for debugging on loopback only (127.0.0.1:PORT)")
        server.start_tcp(host, int(port))
    else:
        server.start_io()
