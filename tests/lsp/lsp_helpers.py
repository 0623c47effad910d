"""Shared pieces of the pytest-lsp end-to-end tests."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

from conftest import scratch
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

SETTINGS: dict[str, Any] = {
    "checks": ["breaks", "recompiles", "timings"],
    "checksOnSave": ["breaks", "recompiles"],
    "backend": "eager",
    "devices": ["cpu"],
}


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# The daemon's workspace (tests/fixtures/daemon) also holds these user-code faults, kept once
# in tests/fixtures/faults.
_DAEMON_FAULTS = ("exits.py", "good_common.py", "hangs.py", "segfaults.py")


def copy_workspace(src: Path) -> Path:
    dst = scratch("dl-lsp-") / "ws"
    shutil.copytree(src, dst)
    return dst


def daemon_workspace() -> Path:
    """A fresh copy of the daemon tests' workspace: healthy code, a syntax error, and user code
    that hangs, segfaults or exits."""
    ws = copy_workspace(FIXTURES / "daemon")
    for name in _DAEMON_FAULTS:
        shutil.copy(FIXTURES / "faults" / name, ws / name)
    return ws


async def start(
    client: LanguageClient,
    ws: Path,
    *,
    trusted: bool = True,
    settings: dict[str, Any] | None = None,
) -> None:
    cfg = settings if settings is not None else SETTINGS
    client.set_configuration(cfg, section="dynamoLens")
    client.statuses = []  # type: ignore[attr-defined]

    @client.feature("dynamoLens/status")
    def _status(ls: LanguageClient, params: Any) -> None:
        client.statuses.append(params)  # type: ignore[attr-defined]

    t0 = time.monotonic()
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=ws.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=ws.as_uri(), name="ws")],
            initialization_options={"trusted": trusted, "settings": cfg},
        )
    )
    client.init_seconds = time.monotonic() - t0  # type: ignore[attr-defined]


def uri(ws: Path, rel: str) -> str:
    return (ws / rel).resolve().as_uri()


def open_doc(client: LanguageClient, ws: Path, rel: str, version: int = 1) -> str:
    u = uri(ws, rel)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                # As an editor sends it: line endings as in the file (a CRLF file stays CRLF).
                uri=u,
                language_id="python",
                version=version,
                text=(ws / rel).read_bytes().decode(),
            )
        )
    )
    return u


def change_and_save(client: LanguageClient, u: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=u, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=u))
    )


def record_publishes(client: LanguageClient) -> list[types.PublishDiagnosticsParams]:
    """Every publishDiagnostics from now on, in order (pytest-lsp keeps the last per file).
    A test waits for the publish of a document version: the event a fixed sleep would guess."""
    seen: list[types.PublishDiagnosticsParams] = []
    features = client.protocol.fm.features
    inner = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(params: types.PublishDiagnosticsParams) -> Any:
        seen.append(params)
        return inner(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record
    return seen


def states(client: LanguageClient) -> list[str]:
    return [
        s.state if hasattr(s, "state") else s["state"]
        for s in client.statuses  # type: ignore[attr-defined]
    ]


def logs(client: LanguageClient) -> list[str]:
    return [m.message for m in client.log_messages]


async def until(pred: Any, timeout: float = 240.0, client: LanguageClient | None = None) -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            detail = ""
            if client is not None:
                detail = "\n".join(logs(client)[-30:]) + f"\nstatus: {states(client)}"
            raise AssertionError(f"timed out waiting\n{detail}")
        await asyncio.sleep(0.1)


def lines(client: LanguageClient, u: str, *, static: bool = False) -> list[int]:
    """Lines with dynamic findings (or, with ``static``, only the static hints)."""
    return sorted(
        d.range.start.line + 1
        for d in client.diagnostics.get(u, [])
        if d.source == "dynamo-lens"
        and isinstance(d.data, dict)
        and (d.data.get("kind") == "static_hint") == static
    )


def client_fixtures(server: Any, make_ws: Any, settings: dict[str, Any]) -> tuple[Any, Any]:
    """A module's ``client`` and ``untrusted`` pytest-lsp fixtures: a fresh daemon on a fresh
    workspace (``make_ws()``), trusted or in Restricted Mode; ``client.ws`` is the workspace."""
    import pytest_lsp

    async def opened(lsp_client: LanguageClient, trusted: bool) -> Any:
        lsp_client.ws = make_ws()  # type: ignore[attr-defined]
        await start(lsp_client, lsp_client.ws, trusted=trusted, settings=settings)  # type: ignore[attr-defined]
        yield
        await lsp_client.shutdown_session()

    @pytest_lsp.fixture(config=server)
    async def client(lsp_client: LanguageClient) -> Any:
        async for _ in opened(lsp_client, True):
            yield

    @pytest_lsp.fixture(config=server)
    async def untrusted(lsp_client: LanguageClient) -> Any:
        async for _ in opened(lsp_client, False):
            yield

    return client, untrusted
