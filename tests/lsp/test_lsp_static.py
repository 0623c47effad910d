"""Static hints in the daemon: instant on edit, replaced when a real run confirms them, gone
when a real run refutes them, and the only thing shown in Restricted Mode."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, markers
from lsp_helpers import (
    client_fixtures,
    copy_workspace,
    lines,
    open_doc,
    record_publishes,
    until,
)
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "dynamo_lens", "serve"])
SETTINGS = {"checks": ["breaks"], "checksOnSave": ["breaks"], "backend": "eager"}


client, untrusted = client_fixtures(
    SERVER, lambda: copy_workspace(FIXTURES / "static_daemon"), SETTINGS
)


def _hint_line(ws: Path, name: str) -> int:
    return markers(ws / name, "hint-line")[0]


@pytest.mark.asyncio
async def test_a_confirmed_hint_is_replaced_by_the_real_break(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    u = open_doc(client, ws, "confirmed.py")
    line = _hint_line(ws, "confirmed.py")
    await until(lambda: line in lines(client, u, static=True) or line in lines(client, u), 30)
    await until(lambda: line in lines(client, u), 120, client)
    assert line not in lines(client, u, static=True)


@pytest.mark.asyncio
async def test_a_refuted_hint_disappears_until_its_function_changes(
    client: LanguageClient,
) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    published = record_publishes(client)
    u = open_doc(client, ws, "refuted.py")
    line = _hint_line(ws, "refuted.py")
    await until(lambda: line in lines(client, u, static=True), 30, client)
    await until(lambda: line not in lines(client, u, static=True), 120, client)
    assert lines(client, u) == []  # the real run found nothing there
    # an edit elsewhere keeps the verdict; an edit of f itself brings the hint back
    text = (ws / "refuted.py").read_text()
    edited = text.replace("import torch\n", "import torch\n\n# a comment\n", 1)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=u, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)],
        )
    )
    await until(lambda: any(p.uri == u and p.version == 2 for p in published), 30, client)
    assert lines(client, u, static=True) == []
    changed_f = edited.replace("return x * x.sum().item()", "return x + x.sum().item()")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=u, version=3),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=changed_f)],
        )
    )
    await until(lambda: line + 2 in lines(client, u, static=True), 30, client)


@pytest.mark.asyncio
async def test_typing_shows_a_hint_before_any_save(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    u = open_doc(client, ws, "confirmed.py")
    text = (ws / "confirmed.py").read_text()
    typed = text.replace("    return y * 2", "    z = y.tolist()\n    return y * 2")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=u, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=typed)],
        )
    )
    new_line = typed.splitlines().index("    z = y.tolist()") + 1
    await until(lambda: new_line in lines(client, u, static=True), 30, client)
    (d,) = [d for d in client.diagnostics[u] if d.range.start.line + 1 == new_line]
    assert d.severity in (types.DiagnosticSeverity.Hint, types.DiagnosticSeverity.Information)
    assert "Likely" in d.message


@pytest.mark.asyncio
async def test_restricted_mode_shows_static_hints_only(untrusted: LanguageClient) -> None:
    client = untrusted
    ws: Path = client.ws  # type: ignore[attr-defined]
    u = open_doc(client, ws, "confirmed.py")
    line = _hint_line(ws, "confirmed.py")
    await until(lambda: line in lines(client, u, static=True), 30, client)
    (d,) = [d for d in client.diagnostics[u] if d.range.start.line + 1 == line]
    assert "dynamic analysis needs a trusted workspace" in d.message
    assert lines(client, u) == []
