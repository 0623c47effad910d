"""The daemon under stress, through a real LSP client: user code that hangs, segfaults or exits;
save bursts; bad requests; Restricted Mode; the on-disk cache; files changed on disk."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from conftest import markers
from lsp_helpers import (
    change_and_save,
    daemon_workspace,
    lines,
    logs,
    open_doc,
    record_publishes,
    start,
    states,
    until,
)
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "dynamo_lens", "serve"])
SETTINGS = {"checks": ["breaks"], "checksOnSave": ["breaks"], "backend": "eager"}


def _fresh() -> Path:
    return daemon_workspace()


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    lsp_client.ws = _fresh()  # type: ignore[attr-defined]
    await start(lsp_client, lsp_client.ws, settings=SETTINGS)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


def _dynamic(d: types.Diagnostic) -> bool:
    return isinstance(d.data, dict) and d.data.get("kind") != "static_hint"


def _errors(client: LanguageClient, u: str) -> list[types.Diagnostic]:
    return [
        d for d in client.diagnostics.get(u, []) if d.severity == types.DiagnosticSeverity.Error
    ]


@pytest.mark.asyncio
async def test_hang_segfault_and_exit_get_errors_and_the_daemon_carries_on(
    client: LanguageClient,
) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    for name, words in (
        ("segfaults.py", "segmentation fault"),
        ("exits.py", "os._exit(7)"),
        ("hangs.py", "timed out"),
    ):
        u = open_doc(client, ws, name)
        await until(lambda u=u: _errors(client, u), 120, client)
        (d,) = _errors(client, u)
        assert words in d.message
        assert d.range.start.line + 1 == markers(ws / name)[0]
    # the next healthy file is analysed normally by a replacement worker
    u = open_doc(client, ws, "healthy.py")
    want = markers(ws / "healthy.py", "break-line")[0]
    await until(lambda: want in lines(client, u), 120, client)
    assert any("worker restarted" in m for m in logs(client))


# Two models in one example: the first breaks, the second crashes the worker as it is traced.
_ONE_CRASHES = """import ctypes

import torch


class Talker(torch.nn.Module):
    def forward(self, x):
        print("talking")  # break-line
        return x * 2


class Crasher(torch.nn.Module):
    def forward(self, x):
        ctypes.string_at(0)  # fault-line
        return x


def compile_example():
    return [(Talker(), (torch.randn(2, 4),)), (Crasher(), (torch.randn(2, 4),))]
"""


@pytest.mark.asyncio
async def test_a_target_that_crashes_leaves_the_breaks_found_before_it(
    client: LanguageClient,
) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "one_crashes.py"
    path.write_text(_ONE_CRASHES)
    u = open_doc(client, ws, path.name)
    await until(lambda: _errors(client, u), 120, client)
    (d,) = _errors(client, u)
    assert d.message.startswith(
        "Analysis stopped in the graph-break check of compile_example[1]: the worker crashed"
    ), d.message
    assert d.range.start.line + 1 == markers(path)[0]
    # Shown with it: the break the first model's check found before the worker crashed.
    assert markers(path, "break-line")[0] in lines(client, u), client.diagnostics.get(u)


@pytest.mark.asyncio
async def test_a_burst_of_saves_shows_the_last_version_after_at_most_one_other_analysis(
    client: LanguageClient,
) -> None:
    """The design (docs/architecture.md, "Bursts"): a burst of saves ends with the last
    version's findings shown, at most one earlier analysis finishes before it (the one the
    first save of a quiet file starts at once), and no state the file never had is shown (a
    read between the editor's truncate and write once published an empty file's result)."""
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "healthy.py"
    base = path.read_text()
    u = open_doc(client, ws, "healthy.py")
    published = record_publishes(client)
    await until(lambda: lines(client, u), 120, client)
    before = len([m for m in logs(client) if "healthy.py: breaks in" in m])
    last = 51
    for i in range(1, last):
        # version i + 1 moves the break down by i lines
        text = base.replace(
            "    torch._dynamo.graph_break()", "    pass\n" * i + "    torch._dynamo.graph_break()"
        )
        path.write_text(text)
        change_and_save(client, u, text, i + 1)
    expected = markers(ws / "healthy.py", "break-line")[0]
    # The event that ends the burst: the analysis of the last version is logged, then shown.
    await until(lambda: any(f"(save, v{last})" in m for m in logs(client)), 120, client)
    await until(lambda: lines(client, u) == [expected], 120, client)
    analyses = [m for m in logs(client) if "healthy.py: breaks in" in m][before:]
    assert 1 <= len(analyses) <= 2, analyses
    assert f"(save, v{last})" in analyses[-1], analyses
    # From the first result on, never an empty (half-written) file's result, nor any other
    # state the file never had: the one break, moved with the text.
    shown = [
        [d.range.start.line + 1 for d in p.diagnostics if _dynamic(d)]
        for p in published
        if p.uri == u
    ]
    first = next(i for i, s in enumerate(shown) if s)  # the first analysis, before the burst
    assert all(len(s) == 1 for s in shown[first:]), shown


@pytest.mark.asyncio
async def test_malformed_requests_get_lsp_errors(client: LanguageClient) -> None:
    for args in ([{"uri": 5}], ["not a dict"], []):
        # Typed arguments: pygls answers what does not structure with InvalidParams.
        with pytest.raises(Exception, match=r"(?i)invalid params|expected 1 arguments"):
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="dynamoLens.server.benchmark", arguments=args)
            )
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=(client.ws / "nope.py").as_uri()),  # type: ignore[attr-defined]
            position=types.Position(line=0, character=0),
        )
    )
    assert hover is None
    # still alive
    env = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="dynamoLens.server.environment", arguments=[])
    )
    assert env["trusted"] is True


@pytest.mark.asyncio
async def test_file_changed_on_disk_is_rechecked(client: LanguageClient) -> None:
    """git checkout, codegen or another editor: no didSave, the watcher notices."""
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "healthy.py"
    u = open_doc(client, ws, "healthy.py")
    await until(lambda: lines(client, u), 120, client)
    path.write_text(path.read_text().replace("    torch._dynamo.graph_break()  # break-line\n", ""))
    await until(lambda: lines(client, u) == [], 120, client)


@pytest_lsp.fixture(config=SERVER)
async def untrusted(lsp_client: LanguageClient) -> AsyncIterator[None]:
    lsp_client.ws = _fresh()  # type: ignore[attr-defined]
    await start(lsp_client, lsp_client.ws, trusted=False, settings=SETTINGS)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


def _state_messages(client: LanguageClient, state: str) -> list[str]:
    out = []
    for s in client.statuses:  # type: ignore[attr-defined]
        st = s.state if hasattr(s, "state") else s["state"]
        if st == state:
            out.append(s.message if hasattr(s, "message") else s["message"])
    return out


@pytest.mark.asyncio
async def test_restricted_mode_runs_no_user_code_and_says_so(untrusted: LanguageClient) -> None:
    client = untrusted
    ws: Path = client.ws  # type: ignore[attr-defined]
    await until(lambda: "restricted" in states(client), 30, client)
    assert "no user code runs" in _state_messages(client, "restricted")[0]
    env = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="dynamoLens.server.environment", arguments=[])
    )
    assert env["trusted"] is False and env["torch"] is None and env["devices"] == []
    u = open_doc(client, ws, "syntax_error.py")
    await until(lambda: _errors(client, u), 30, client)
    assert "SyntaxError" in _errors(client, u)[0].message  # found without running anything
    h = open_doc(client, ws, "exits.py")  # would kill a worker if anything ran it
    await until(lambda: h in client.diagnostics, 30, client)
    # Restricted Mode starts no worker, so nothing can report later: a request answered after
    # the open (the daemon handles messages in order) is enough to look at what was said.
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="dynamoLens.server.environment", arguments=[])
    )
    assert _errors(client, h) == []
    assert not any("discover" in m or "analyze" in m for m in logs(client))
    assert "warming" not in states(client)


async def _session(ws: Path, rel: str) -> tuple[list[str], list[int], float]:
    """One whole daemon session with pygls's own client: open ``rel``, wait for diagnostics."""
    from pygls.lsp.client import LanguageClient as PlainClient

    c = PlainClient("cache-test", "1")
    got: dict[str, list[int]] = {}
    messages: list[str] = []

    @c.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _diag(p: types.PublishDiagnosticsParams) -> None:
        got[p.uri] = [
            d.range.start.line + 1
            for d in p.diagnostics
            if isinstance(d.data, dict) and d.data.get("kind") != "static_hint"
        ]

    @c.feature(types.WINDOW_LOG_MESSAGE)
    def _log(p: types.LogMessageParams) -> None:
        messages.append(p.message)

    await c.start_io(sys.executable, "-m", "dynamo_lens", "serve")
    await c.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=ws.as_uri(),
            initialization_options={"trusted": True, "settings": SETTINGS},
        )
    )
    c.initialized(types.InitializedParams())
    u = (ws / rel).resolve().as_uri()
    t0 = time.monotonic()
    c.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=u, language_id="python", version=1, text=(ws / rel).read_text()
            )
        )
    )
    end = time.monotonic() + 120
    while not got.get(u) and time.monotonic() < end:
        await asyncio.sleep(0.02)
    latency = time.monotonic() - t0
    await c.shutdown_async(None)
    c.exit(None)
    await c.stop()
    return messages, got.get(u, []), latency


@pytest.mark.asyncio
async def test_reopening_an_unchanged_file_is_a_cache_hit_without_worker_jobs() -> None:
    ws = _fresh()
    first_logs, first, _ = await _session(ws, "healthy.py")
    assert first and any("discover" in m for m in first_logs)
    second_logs, second, _ = await _session(ws, "healthy.py")
    assert second == first
    assert any("cache hit" in m for m in second_logs)
    assert not any("discover" in m or "analyze" in m for m in second_logs)
    # a corrupt entry is ignored and rebuilt
    from dynamo_lens.server.cache import default_directory

    entries = list(default_directory(ws).rglob("*.msgpack"))  # outside the workspace now
    assert entries and not (ws / ".dynamo-lens").exists()
    for entry in entries:
        entry.write_bytes(b"\x00garbage")
    third_logs, third, _ = await _session(ws, "healthy.py")
    assert third == first and any("discover" in m for m in third_logs)


@pytest_lsp.fixture(config=SERVER)
async def misconfigured(lsp_client: LanguageClient) -> AsyncIterator[None]:
    lsp_client.ws = _fresh()  # type: ignore[attr-defined]
    bad = {**SETTINGS, "timeout": -1, "devices": ["tpu:0"]}
    await start(lsp_client, lsp_client.ws, settings=bad)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_bad_settings_are_named_and_defaults_used(misconfigured: LanguageClient) -> None:
    client = misconfigured
    await until(lambda: len(client.messages) >= 2, 30, client)
    texts = [m.message for m in client.messages]
    assert any("'timeout' has bad value -1" in t for t in texts)
    assert any("'devices' has bad value" in t for t in texts)
    u = open_doc(client, client.ws, "healthy.py")  # type: ignore[attr-defined]
    await until(lambda: lines(client, u), 120, client)  # analysis still works on defaults
