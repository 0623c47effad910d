"""Run File with Analysis and the last run, through the real daemon with pytest-lsp: findings
with provenance, the distinct-break summary, hovers, a failing command, cancel."""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from conftest import scratch
from lsp_helpers import start, until
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

# A training script with no compile_example (shared with the e2e tests): one break, marked.
TRAIN = (Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "train_run.py").read_text()
BREAK_LINE = next(i for i, t in enumerate(TRAIN.splitlines(), 1) if "expect: graph_break" in t)

# Starts a child that outlives its parent's SIGTERM handler unless the whole group is
# killed; its pid is written so the test can see it die.
HANG = """\
import subprocess
import sys
import time

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(sys.argv[1], "w") as fh:
    fh.write(str(child.pid))
print("waiting", flush=True)
time.sleep(600)
"""

WS = scratch("dl-runs-") / "ws"
WS.mkdir()
(WS / "train.py").write_text(TRAIN)
(WS / "hang.py").write_text(HANG)
TRAIN_URI = (WS / "train.py").resolve().as_uri()


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "dynamo_lens", "serve"])
)
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    await start(lsp_client, WS, settings={"checks": ["breaks"], "backend": "eager"})
    yield
    await lsp_client.shutdown_session()


async def _run(client: LanguageClient, token: str, **args: object) -> dict[str, object]:
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="dynamoLens.server.runFile", arguments=[args], work_done_token=token
        )
    )
    assert isinstance(result, dict)
    return result


def _diagnostics(client: LanguageClient) -> list[types.Diagnostic]:
    return list(client.diagnostics.get(TRAIN_URI, []))


@pytest.mark.asyncio
async def test_run_file_shows_findings_with_provenance_summary_and_hover(
    client: LanguageClient,
) -> None:
    result = await _run(client, "run-1", uri=TRAIN_URI)
    assert result["exitCode"] == 0 and result["cancelled"] is False
    await until(lambda: _diagnostics(client), 60, client)
    by_line = {d.range.start.line + 1: d for d in _diagnostics(client)}
    brk = by_line[BREAK_LINE]
    assert brk.code == "GB0170" and brk.message.startswith("Graph break")
    # As the user would type it: the interpreter by name, the file relative to the workspace.
    assert re.search(r'seen in run "python[\d.]* train\.py" at \d\d:\d\d', brk.message), brk.message
    assert any("trained" in m.message for m in client.log_messages)  # its output, in the log
    kinds = [type(p).__name__ for p in client.progress_reports.get("run-1", [])]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"

    summary = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="dynamoLens.server.runSummary", arguments=[])
    )
    (row,) = summary["rows"]
    assert (row["uri"], row["line"], row["gbId"]) == (TRAIN_URI, BREAK_LINE, "GB0170")
    assert row["count"] >= 1 and row["compileSeconds"] > 0
    assert summary["exitCode"] == 0 and summary["torch"].startswith("2.")
    # The compiled functions, the costliest to compile first: the training step is one.
    fns = summary["functions"]
    assert fns and all(a["seconds"] >= b["seconds"] for a, b in itertools.pairwise(fns))
    assert any(f["uri"] == TRAIN_URI and f["breaks"] >= 1 for f in fns), fns

    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=TRAIN_URI),
            position=types.Position(line=BREAK_LINE - 1, character=8),
        )
    )
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    assert "Compile time" in text and "recompiles" in text and "step" in text


@pytest.mark.asyncio
async def test_a_failing_command_still_shows_what_ran_with_its_exit_code(
    client: LanguageClient,
) -> None:
    result = await _run(client, "run-2", command="python ${file} --fail", uri=TRAIN_URI)
    assert result["exitCode"] == 3 and result["findings"] >= 1
    await until(lambda: any("exit code 3" in d.message for d in _diagnostics(client)), 60)


@pytest.mark.asyncio
async def test_cancel_stops_the_whole_process_group(client: LanguageClient) -> None:
    pid_file = WS / "child.pid"
    task = asyncio.ensure_future(_run(client, "run-3", command=f"python hang.py {pid_file}"))
    await until(lambda: pid_file.exists() and pid_file.read_text(), 60)
    child = int(pid_file.read_text())
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token="run-3"))
    result = await asyncio.wait_for(task, 60)
    assert result["cancelled"] is True
    end = time.monotonic() + 10
    while time.monotonic() < end and _alive(child):
        await asyncio.sleep(0.1)
    assert not _alive(child), "the command's child outlived the cancel"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (dead, not yet reaped by init) counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False
