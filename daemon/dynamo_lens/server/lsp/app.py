"""The language server object: the state the handlers share and the ways back to the client.

Handlers live one module per request family (``lifecycle``, ``textsync``, ``notebooksync``,
``features``, the ``commands`` package); ``serve`` registers each on ``server``. Nothing here
analyses anything: the ``AnalysisService`` does, and this module turns its callbacks into LSP
notifications.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcServerNotInitialized
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from ...config import Config, apply, load
from ...findings import Finding
from ...notebooks.cells import Cell
from ...runs.command import TracedRun
from ...version import __version__
from ..documents import Shown
from ..hints import MAX_FILE_BYTES
from ..service import AnalysisService
from ..watcher import Watcher
from .convert import diagnostic, path_to_uri, uri_to_path

log = logging.getLogger(__name__)
STATUS = "dynamoLens/status"
CMD = "dynamoLens.server."


class _Protocol(LanguageServerProtocol):
    """pygls hands a command only its arguments; the benchmark needs the request's
    workDoneToken to report progress on, so it is added to the first (object) argument.

    pygls drops a request whose params do not fit its type (it logs and moves on), so the
    client would wait forever: such a request is answered with the error here."""

    def handle_message(self, message: Any) -> None:
        # Nothing but initialize (and exit) before initialize: a stray connection can run
        # no command, and a request gets the spec's error instead of silence.
        method = getattr(message, "method", None)
        server = self._server
        if (
            method is not None
            and method not in (types.INITIALIZE, types.EXIT)
            and isinstance(server, DynamoLensServer)
            and not server.initialized
        ):
            msg_id = getattr(message, "id", None)
            if msg_id is not None:
                err = JsonRpcServerNotInitialized().to_response_error()
                self._send_response(msg_id, error=err)
            return
        super().handle_message(message)

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                self._send_response(data["id"], error=exc.to_response_error())
            raise

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        # pygls cancels the requests still in flight while iterating the dict that a cancelled
        # request's callback pops from: a request queued for the thread pool (the client asks
        # for the run summary as each daemon starts) failed the shutdown, and the daemon lived
        # on beside its replacement. The same, over a copy.
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current_id = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, Any]:
        # pygls applies each incremental change by re-splitting the whole text: 100 ms per
        # keystroke at 5 MB, on the event loop. A file over the size limit is skipped anyway,
        # so its keystrokes are not applied; its text is read back from disk when saved.
        server = self._server
        doc = self.workspace.text_documents.get(unquote(params.text_document.uri))
        partial = all(
            isinstance(c, types.TextDocumentContentChangePartial) for c in params.content_changes
        )
        if (
            isinstance(server, DynamoLensServer)
            and doc is not None
            and partial
            and len(doc.source) > MAX_FILE_BYTES
        ):
            doc.version = params.text_document.version
            server.desynced.add(unquote(params.text_document.uri))
            return None
        return (yield from super().lsp_text_document__did_change(params))

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(
        self, params: types.ExecuteCommandParams
    ) -> Generator[Any, Any, Any]:
        if params.work_done_token is not None and params.arguments:
            first = params.arguments[0]
            if isinstance(first, dict):
                first.setdefault("workDoneToken", params.work_done_token)
        return (yield from super().lsp_workspace__execute_command(params))


class DynamoLensServer(LanguageServer):
    def __init__(self) -> None:
        # Notebooks: the editor sends their cells (LSP 3.17 notebook sync), Python cells only.
        cells = types.NotebookDocumentFilterWithCells(
            notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")]
        )
        super().__init__(
            "dynamo-lens",
            __version__,
            protocol_cls=_Protocol,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[cells], save=True
            ),
        )
        self.service: AnalysisService | None = None
        self.settings: dict[str, Any] = {}
        self.trusted = True
        self.root = Path.cwd()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.watcher: Watcher | None = None
        self._config_problems: list[str] = []
        self.pending_restart: asyncio.TimerHandle | None = None
        self.tcp_token: str | None = None  # serve --tcp: initialize must carry it
        # Documents whose keystrokes were not applied (over the size limit): disk is truth.
        self.desynced: set[str] = set()
        self.initialized = False
        self.started = threading.Event()
        # Commands run here, not on pygls's pool, which also reads the LSP stream.
        self.commands = ThreadPoolExecutor(max_workers=8, thread_name_prefix="command")
        self.runs: set[TracedRun] = set()  # commands running for "Run File with Analysis"
        self._closed = threading.Lock()

    # -- sending (from any thread) -----------------------------------------------------------
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

    def publish(self, path: str, shown: Callable[[], Shown]) -> None:
        def send() -> None:
            findings, version = shown()
            params = types.PublishDiagnosticsParams(
                uri=path_to_uri(path),
                diagnostics=[diagnostic(f) for f in findings],
                version=version,
            )
            self.text_document_publish_diagnostics(params)

        self.on_loop(send)

    def clear_diagnostics(self, uri: str) -> None:
        params = types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        self.on_loop(lambda: self.text_document_publish_diagnostics(params))

    def publish_cells(self, path: str, by_cell: dict[int, list[Finding]]) -> None:
        """A notebook's findings, each to its cell's document (cells by position, 1-based, as
        the editor holds them when the message is sent)."""

        def send() -> None:
            nb = self.workspace.get_notebook_document(notebook_uri=path_to_uri(path))
            if nb is None:
                return
            for i, cell in enumerate(nb.cells, start=1):
                params = types.PublishDiagnosticsParams(
                    uri=cell.document,
                    diagnostics=[diagnostic(f) for f in by_cell.get(i, [])],
                )
                self.text_document_publish_diagnostics(params)

        self.on_loop(send)

    def status(self, payload: dict[str, Any]) -> None:
        self.on_loop(lambda: self.protocol.notify(STATUS, payload))

    def log_line(self, text: str) -> None:
        params = types.LogMessageParams(type=types.MessageType.Log, message=text)
        self.on_loop(lambda: self.window_log_message(params))

    def apply_edit(self, params: types.ApplyWorkspaceEditParams, timeout: float = 120.0) -> bool:
        """workspace/applyEdit from a command thread; whether the client applied it."""
        if self.loop is None or not self.loop.is_running():
            return False
        fut = asyncio.run_coroutine_threadsafe(self._apply_edit(params), self.loop)
        try:
            return fut.result(timeout)
        except Exception:  # no answer, or an error answer: not applied
            fut.cancel()
            return False

    def progress_token(self, prefix: str, timeout: float = 30.0) -> str | None:
        """A work-done token the server made (window/workDoneProgress/create), for a command
        that came without one; None when the client cannot show server-initiated progress."""
        caps = self.client_capabilities.window
        if caps is None or not caps.work_done_progress:
            return None
        if self.loop is None or not self.loop.is_running():
            return None
        self._tokens = getattr(self, "_tokens", 0) + 1
        token = f"{prefix}-{os.getpid()}-{self._tokens}"

        async def create() -> None:
            await self.work_done_progress.create_async(token)

        try:
            asyncio.run_coroutine_threadsafe(create(), self.loop).result(timeout)
        except Exception:  # refused or unanswered: no progress, the command still runs
            return None
        return token

    async def _apply_edit(self, params: types.ApplyWorkspaceEditParams) -> bool:
        answer = await self.workspace_apply_edit_async(params)
        return bool(getattr(answer, "applied", False))

    def warn(self, text: str) -> None:
        params = types.ShowMessageParams(type=types.MessageType.Warning, message=text)
        self.on_loop(lambda: self.window_show_message(params))

    # -- state -------------------------------------------------------------------------------
    def config(self) -> Config:
        cfg, problems = load(self.root)
        cfg, more = apply(cfg, self.settings, "dynamoLens settings")
        for p in problems + more:
            if p not in self._config_problems:
                self.warn(f"Dynamo Lens: {p}")
        self._config_problems = problems + more
        return cfg

    def apply_settings(self) -> None:
        """Settings changed: restart only when analysis results or workers depend on what
        changed; the display-only settings apply to the running service."""
        self.pending_restart = None
        cfg = self.config()
        service = self.service
        if service is not None and service.config == cfg:
            return
        if service is not None and service.config.same_but_live(cfg):
            service.apply_live(cfg)
            self.log_line("settings changed: applied without a restart")
            return
        self.log_line("settings changed: restarting the analysis service")
        self.start_service(cfg)

    def start_service(self, cfg: Config | None = None) -> None:
        self.stop_service()
        cfg = cfg or self.config()
        self.service = AnalysisService(
            self.root,
            cfg,
            trusted=self.trusted,
            publish=self.publish,
            status=self.status,
            log=self.log_line,
            warn=self.warn,
            publish_cells=self.publish_cells,
        )
        self.service.start()
        if self.trusted:
            self.watcher = Watcher(
                self.root,
                cfg.excludes,
                self.service.disk_changed,
                also=self.service.known.is_baseline,
            )
            self.watcher.start()
            self.log_line(f"watching {self.root} for changes on disk")
        for doc in list(self.workspace.text_documents.values()):
            path = uri_to_path(doc.uri)
            if path is not None:
                self.service.open(path, doc.source, doc.version)
        for nb_uri in list(self.workspace.notebook_documents):
            path = uri_to_path(nb_uri)
            if path is not None:
                self.service.notebooks.edited(path, self.notebook_cells(nb_uri))
        self.started.set()

    def notebook_cell(self, uri: str) -> tuple[str, int] | None:
        """(the notebook's path, the cell's 1-based position) of a notebook cell's URI."""
        nb = self.workspace.get_notebook_document(cell_uri=uri)
        path = uri_to_path(nb.uri) if nb is not None else None
        if nb is None or path is None:
            return None
        cells = enumerate(nb.cells, start=1)
        index = next((i for i, c in cells if unquote(c.document) == unquote(uri)), 0)
        return (path, index) if index else None

    def notebook_cells(self, uri: str) -> list[Cell]:
        """A notebook's cells as the editor holds them (pygls keeps their texts)."""
        nb = self.workspace.get_notebook_document(notebook_uri=uri)
        if nb is None:
            return []
        out = []
        for i, cell in enumerate(nb.cells, start=1):
            kind = "code" if cell.kind == types.NotebookCellKind.Code else "markdown"
            ran = cell.execution_summary.execution_order if cell.execution_summary else None
            out.append(Cell(i, kind, self.workspace.get_text_document(cell.document).source, ran))
        return out

    def stop_service(self) -> None:
        """Stop watching, cancel jobs and kill the workers' process groups."""
        watcher, self.watcher = self.watcher, None
        service, self.service = self.service, None
        if watcher is not None:
            watcher.stop()
        if service is not None:
            service.close()

    def stop_runs(self) -> None:
        """The daemon is leaving: the commands it started go with it, and their traces."""
        for run in list(self.runs):
            run.kill()

    def exit_now(self, code: int) -> None:
        """Leave the process at once: after ``stop_service`` nothing is left to save, and the
        interpreter's exit would wait on pool threads still blocked in a read."""
        if not self._closed.acquire(blocking=False):
            return
        try:
            self.stop_runs()
            self.stop_service()
        finally:
            logging.shutdown()
            os._exit(code)

    def resync(self, uri: str) -> None:
        """A document whose keystrokes were skipped takes its saved text from disk."""
        key = unquote(uri)
        if key not in self.desynced:
            return
        self.desynced.discard(key)
        doc = self.workspace.text_documents.get(key)
        path = uri_to_path(uri)
        if doc is None or path is None:
            return
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return
        self.workspace.put_text_document(
            types.TextDocumentItem(
                uri=uri, language_id="python", version=doc.version or 0, text=text
            )
        )

    def is_open(self, uri: str) -> bool:
        return unquote(uri) in self.workspace.text_documents

    def doc_text(self, uri: str) -> tuple[str, int | None]:
        doc = self.workspace.get_text_document(uri)
        return doc.source, doc.version

    def svc(self) -> AnalysisService:
        # Commands can arrive before `initialized` has been handled: wait for the service.
        if not self.started.wait(30) or self.service is None:
            raise RuntimeError("the server is not initialized")
        return self.service


server = DynamoLensServer()
