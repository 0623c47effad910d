"""Verified fixes through a real LSP client (issue 18): the light bulb of a graph break offers
"Verify, then apply"; the daemon runs the rewrite in the worker and sends it back as an edit of
the buffer's version; once verified, the action is the preferred fix and says what was shown;
applied and saved, the break is gone."""

from __future__ import annotations

import ast
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_lsp
from lsp_helpers import (
    FIXTURES,
    change_and_save,
    copy_workspace,
    lines,
    logs,
    open_doc,
    start,
    until,
)
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

WS = copy_workspace(FIXTURES / "fixes")
REL = "branchy.py"


def _line(marker: str) -> int:
    text = (WS / REL).read_text()
    return next(i for i, ln in enumerate(text.splitlines(), 1) if f"# here: {marker}" in ln)


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "dynamo_lens", "serve"])
)
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    await _start_declining(lsp_client, WS, ["breaks"])
    yield
    await lsp_client.shutdown_session()


async def _start_declining(lsp_client: LanguageClient, ws: Any, checks: list[str]) -> None:
    """Starts the daemon on ``ws``; the client records and declines each edit the daemon asks
    it to apply: the test applies the verified action's own edit itself."""
    lsp_client.edits = []  # type: ignore[attr-defined]

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def _apply(ls: LanguageClient, params: types.ApplyWorkspaceEditParams) -> Any:
        lsp_client.edits.append(params)  # type: ignore[attr-defined]
        return types.ApplyWorkspaceEditResult(applied=False)

    await start(lsp_client, ws, settings={"checks": checks, "backend": "eager"})


async def _actions(client: LanguageClient, uri: str, line: int) -> list[types.CodeAction]:
    diags = [d for d in client.diagnostics[uri] if d.range.start.line == line - 1]
    assert diags, f"no diagnostic at line {line}"
    got = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diags[0].range,
            context=types.CodeActionContext(diagnostics=diags),
        )
    )
    return [_action(a) for a in got or []]


def _action(a: types.Command | types.CodeAction) -> types.CodeAction:
    """lsprotocol's client side reads a CodeAction that carries a command as a Command whose
    ``command`` is the action's command printed as a dict (VS Code reads it right)."""
    if isinstance(a, types.CodeAction):
        return a
    cmd = ast.literal_eval(a.command) if a.command.startswith("{") else {"command": a.command}
    inner = types.Command(
        title=cmd.get("title", a.title), command=cmd["command"], arguments=cmd.get("arguments")
    )
    return types.CodeAction(title=a.title, command=inner)


def _versioned(action: types.CodeAction, version: int) -> types.TextEdit:
    """The action's one edit, which must be for ``version`` of the buffer only."""
    assert action.edit is not None and action.edit.document_changes is not None, action
    (doc_edit,) = action.edit.document_changes
    assert isinstance(doc_edit, types.TextDocumentEdit)
    assert doc_edit.text_document.version == version
    (edit,) = doc_edit.edits
    assert isinstance(edit, types.TextEdit)
    return edit


def _apply(text: str, edit: types.TextEdit) -> str:
    rows = text.splitlines(keepends=True)
    start, end = edit.range.start.line, edit.range.end.line
    return "".join([*rows[:start], edit.new_text, *rows[end:]])


@pytest.mark.asyncio
async def test_verify_then_apply_a_fix_from_the_light_bulb(client: LanguageClient) -> None:
    uri = open_doc(client, WS, REL)
    printed, branch = _line("print"), _line("branch")
    await until(lambda: {printed, branch} <= set(lines(client, uri)), 240, client)

    verifies = [
        a for a in await _actions(client, uri, printed) if a.command and "Verify" in a.title
    ]
    # The guard, and the op that logs from inside the graph: one action per rewrite.
    guard, log = verifies
    assert "Log from inside the graph" in log.title, log.title
    verify = guard
    assert verify.title.startswith("Verify, then apply: Run the logger call only in eager")
    assert verify.command is not None and not verify.is_preferred
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command=verify.command.command, arguments=verify.command.arguments
        )
    )
    assert result["verified"] and not result["applied"], result
    assert [c["name"] for c in result["checks"] if c["ok"]] == [
        "break gone",
        "no new break",
        "outputs equal",
        "same state",
        "same effects",
        "compiled equal",
        "no break on later calls",
        "no new recompile",
        "file unchanged",
    ]
    # The command came without a token: the daemon made one, and showed the verification on it.
    titles = [v.title for vs in client.progress_reports.values() for v in vs if hasattr(v, "title")]
    assert "Dynamo Lens: verifying a fix" in titles
    (sent,) = client.edits  # type: ignore[attr-defined]
    (doc_edit,) = sent.edit.document_changes
    assert doc_edit.text_document.version == 1  # for the buffer it was proposed on

    (preferred,) = [a for a in await _actions(client, uri, printed) if a.is_preferred]
    assert preferred.title == (
        "Run the logger call only in eager (torch.compiler.is_compiling()): compiled calls "
        "skip it (verified: equivalent)"
    )
    edit = _versioned(preferred, 1)  # for the buffer it was offered on, and no other
    text = _apply((WS / REL).read_text(), edit)
    (WS / REL).write_text(text)
    change_and_save(client, uri, text, 2)
    await until(lambda: printed not in lines(client, uri) and branch in lines(client, uri), 240)


WS_RC = copy_workspace(FIXTURES / "fixes")


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "dynamo_lens", "serve"])
)
async def recompiles_client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    await _start_declining(lsp_client, WS_RC, ["recompiles"])
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_a_recompile_gets_a_verified_fix_from_the_light_bulb(
    recompiles_client: LanguageClient,
) -> None:
    client = recompiles_client
    rel = "step_counter.py"
    uri = open_doc(client, WS_RC, rel)
    text = (WS_RC / rel).read_text()
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "# here: counter" in ln)
    await until(lambda: line in lines(client, uri), 240, client)
    (verify,) = [a for a in await _actions(client, uri, line) if a.command and "Verify" in a.title]
    assert "allow_unspec_int_on_nn_module" in verify.title
    assert verify.command is not None
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command=verify.command.command, arguments=verify.command.arguments
        )
    )
    assert result["verified"], result
    names = [c["name"] for c in result["checks"]]
    assert names[:4] == [
        "calls still run",
        "fewer recompiles there",
        "no new recompile site",
        "fewer compiles",
    ]
    assert "no slower" in names and "outputs equal" in names, names
    (preferred,) = [a for a in await _actions(client, uri, line) if a.is_preferred]
    # The title says what verification measured: equal, and the steady time against the
    # original's (the fix compiles fewer frames; it must not run slower once warm).
    assert "(verified: equivalent; steady time " in preferred.title, preferred.title
    assert preferred.title.endswith("the original's (noise ±" + preferred.title.split("±")[-1])
    edit = _versioned(preferred, 1)
    fixed = _apply(text, edit)
    (WS_RC / rel).write_text(fixed)
    change_and_save(client, uri, fixed, 2)
    # The save's analysis (the daemon logs each with the version it analysed), then no finding.
    await until(
        lambda: any(f"{rel}: " in m and "recompiles in" in m and "v2)" in m for m in logs(client)),
        240,
        client,
    )
    await until(lambda: lines(client, uri) == [], 60, client)


@pytest.mark.asyncio
async def test_a_fix_of_a_crlf_file_keeps_its_line_endings(client: LanguageClient) -> None:
    """The buffer of a CRLF file is its file (no rewrite is refused as "not saved"), and the
    edit's new lines end in CRLF too."""
    rel = "crlf.py"
    (WS / rel).write_bytes((FIXTURES / "fixes" / REL).read_bytes().replace(b"\n", b"\r\n"))
    uri = open_doc(client, WS, rel)
    text = (WS / rel).read_bytes().decode()
    line = next(i for i, ln in enumerate(text.split("\r\n"), 1) if "# here: print" in ln)
    await until(lambda: line in lines(client, uri), 240, client)
    verify = next(
        a
        for a in await _actions(client, uri, line)
        if a.command and a.title.startswith("Verify, then apply: Run the logger call")
    )
    assert verify.command is not None
    client.edits.clear()  # type: ignore[attr-defined]
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command=verify.command.command, arguments=verify.command.arguments
        )
    )
    assert result["verified"], result
    (sent,) = client.edits  # type: ignore[attr-defined]
    (doc_edit,) = sent.edit.document_changes
    (edit,) = doc_edit.edits
    assert edit.new_text == (
        "        if not torch.compiler.is_compiling():\r\n"
        '            logger.debug("forward ran")  # here: print\r\n'
    )
    (preferred,) = [a for a in await _actions(client, uri, line) if a.is_preferred]
    assert _versioned(preferred, 1).new_text == edit.new_text
