"""Known findings through the real daemon (dynamoLens.knownFindings): a baseline written by
`dynamo-lens check --write-baseline`, read by the daemon from `[tool.dynamo-lens]`, the findings
it accepts shown as hints or not at all, new ones as they are. In Restricted Mode (static hints:
no worker, no torch): the baseline marks what is shown, whatever made it."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from conftest import FIXTURES, markers, run_cli
from lsp_helpers import copy_workspace, open_doc, record_publishes, start, until
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "dynamo_lens", "serve"])
SETTINGS = {"checks": ["breaks"], "checksOnSave": ["breaks"], "knownFindings": "hint"}

ACCEPTED = """\
def accepted(x):
    y = torch.sin(x)
    print("accepted", y.shape)  # known-line
    return y * 2


def compile_example():
    return accepted, (torch.randn(4),)
"""
ADDED = """\
def added(x):
    print("added", x.shape)  # new-line
    return x + 1


def compile_example_added():
    return added, (torch.randn(4),)
"""


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    """A workspace whose baseline accepts the print in ``accepted``; since then lines moved
    above it and ``added`` came with a print of its own."""
    ws = lsp_client.ws = copy_workspace(FIXTURES / "static_daemon")  # type: ignore[attr-defined]
    baseline = "dynamo-lens-baseline.json"
    with (ws / "pyproject.toml").open("a") as fh:
        fh.write(f'baseline = "{baseline}"\n')
    (ws / "known.py").write_text(f"import torch\n\n\n{ACCEPTED}")
    rc, _, err = run_cli(
        "check", "known.py", "--checks", "static", "--write-baseline", baseline, cwd=ws
    )
    assert rc == 0 and "1 finding(s)" in err, err
    (ws / "known.py").write_text(f"import torch\n\n# moved\n\n\n{ACCEPTED}\n\n{ADDED}")
    await start(lsp_client, ws, trusted=False, settings=SETTINGS)
    yield
    await lsp_client.shutdown_session()


def _by_line(client: LanguageClient, u: str) -> dict[int, types.Diagnostic]:
    return {d.range.start.line + 1: d for d in client.diagnostics.get(u, [])}


@pytest.mark.asyncio
async def test_known_findings_are_hints_or_hidden_and_new_ones_keep_their_severity(
    client: LanguageClient,
) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    (known,) = markers(ws / "known.py", "known-line")
    (new,) = markers(ws / "known.py", "new-line")
    u = open_doc(client, ws, "known.py")
    await until(lambda: {known, new} <= set(_by_line(client, u)), 30, client)
    shown = _by_line(client, u)
    assert shown[known].severity == types.DiagnosticSeverity.Hint
    assert "(known: in the baseline)" in shown[known].message
    assert isinstance(shown[known].data, dict) and shown[known].data["baseline"] == "known"
    # A high-confidence static hint is information; a new one stays so.
    assert shown[new].severity == types.DiagnosticSeverity.Information
    assert "known" not in shown[new].message
    assert isinstance(shown[new].data, dict) and shown[new].data["baseline"] == "new"

    # "hide", as an editor sends a change: applied live, the file shown again without it.
    hide = {**SETTINGS, "knownFindings": "hide"}
    client.set_configuration(hide, section="dynamoLens")
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"dynamoLens": hide})
    )
    await until(lambda: known not in _by_line(client, u), 30, client)
    assert _by_line(client, u)[new].severity == types.DiagnosticSeverity.Information
    assert client.messages == []  # nothing to warn about


@pytest.mark.asyncio
async def test_a_broken_baseline_is_said_once_and_every_finding_is_shown(
    client: LanguageClient,
) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    (ws / "dynamo-lens-baseline.json").write_text('{"version": 1, "findings": [')
    (known,) = markers(ws / "known.py", "known-line")
    (new,) = markers(ws / "known.py", "new-line")
    published = record_publishes(client)
    u = open_doc(client, ws, "known.py")
    await until(lambda: {known, new} <= set(_by_line(client, u)), 30, client)
    assert {d.severity for d in _by_line(client, u).values()} == {
        types.DiagnosticSeverity.Information
    }
    await until(lambda: client.messages, 30, client)
    (warning,) = client.messages
    assert "dynamo-lens-baseline.json is not JSON" in warning.message
    assert "shown as new" in warning.message
    # Another edit, another publish: not said again.
    text = (ws / "known.py").read_text() + "\n"
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=u, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    await until(lambda: any(p.uri == u and p.version == 2 for p in published), 30, client)
    assert len(client.messages) == 1
