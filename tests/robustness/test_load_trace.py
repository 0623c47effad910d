"""Loading a run's trace in the editor: findings with provenance, and in Restricted Mode too,
since reading a trace runs no workspace code."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from support.raw_lsp import RawClient
from support.tracerun import BREAK_SCRIPT, break_trace


def test_a_trace_loads_in_restricted_mode_with_its_provenance(tmp_path: Path) -> None:
    ws, trace = break_trace(tmp_path)
    (ws / "train.py").write_text(BREAK_SCRIPT + "open('RAN', 'w').write('ran')\n")  # must not run
    uri = (ws / "train.py").as_uri()
    client = RawClient(ws)
    try:
        client.initialize(ws, trusted=False, settings={"checks": ["breaks"]})
        args = {"command": "dynamoLens.server.loadTrace", "arguments": [str(trace)]}
        client.send({"id": 2, "method": "workspace/executeCommand", "params": args})
        reply = client.response(2, timeout=60)
        assert reply is not None and reply["result"]["findings"] == 1, reply
        end = time.monotonic() + 30
        diags: list[dict[str, object]] = []
        while time.monotonic() < end and not diags:
            for n in client.notifications("textDocument/publishDiagnostics"):
                if n["params"]["uri"] == uri and n["params"]["diagnostics"]:
                    diags = n["params"]["diagnostics"]
            time.sleep(0.1)
        (d,) = diags
        assert d["range"]["start"]["line"] == 5 and d["code"] == "GB0170"
        assert f"seen in trace {trace}" in str(d["message"])
        assert not (ws / "RAN").exists()
    finally:
        client.close()


def _diagnostics_of(client: RawClient, uri: str, timeout: float = 30) -> list[dict[str, Any]]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for n in reversed(client.notifications("textDocument/publishDiagnostics")):
            if n["params"]["uri"] == uri:
                if n["params"]["diagnostics"]:
                    return list(n["params"]["diagnostics"])
                break
        time.sleep(0.1)
    return []


def test_run_findings_survive_a_restart_then_go_stale_when_the_file_changes(
    tmp_path: Path,
) -> None:
    ws, trace = break_trace(tmp_path)
    uri = (ws / "train.py").as_uri()
    first = RawClient(ws)
    try:
        first.initialize(ws, trusted=False, settings={"checks": ["breaks"]})
        args = {"command": "dynamoLens.server.loadTrace", "arguments": [str(trace)]}
        first.send({"id": 2, "method": "workspace/executeCommand", "params": args})
        assert first.response(2, timeout=60) is not None
        assert _diagnostics_of(first, uri)
    finally:
        first.close()
    # A new daemon (VS Code restarted) shows the run again, unchanged file: not stale.
    second = RawClient(ws)
    try:
        second.initialize(ws, trusted=False, settings={"checks": ["breaks"]})
        (d,) = _diagnostics_of(second, uri)
        assert d["code"] == "GB0170" and "stale" not in d["message"]
    finally:
        second.close()
    (ws / "train.py").write_text(BREAK_SCRIPT.replace("x * 2", "x * 3"))
    third = RawClient(ws)
    try:
        third.initialize(ws, trusted=False, settings={"checks": ["breaks"]})
        (d,) = _diagnostics_of(third, uri)
        assert "stale" in d["message"]
        args = {"command": "dynamoLens.server.clearRun", "arguments": []}
        third.send({"id": 3, "method": "workspace/executeCommand", "params": args})
        reply = third.response(3, timeout=30)
        assert reply is not None and reply["result"]["files"] == 1
        end = time.monotonic() + 10
        cleared = False
        while time.monotonic() < end and not cleared:
            last = [
                n
                for n in third.notifications("textDocument/publishDiagnostics")
                if n["params"]["uri"] == uri
            ]
            cleared = bool(last) and not last[-1]["params"]["diagnostics"]
            time.sleep(0.1)
        assert cleared
    finally:
        third.close()


def test_restricted_mode_refuses_to_run_a_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "train.py").write_text("open('RAN', 'w').write('ran')\n")
    client = RawClient(ws)
    try:
        client.initialize(ws, trusted=False, settings={"checks": ["breaks"]})
        args = {
            "command": "dynamoLens.server.runFile",
            "arguments": [{"uri": (ws / "train.py").as_uri()}],
        }
        client.send({"id": 2, "method": "workspace/executeCommand", "params": args})
        reply = client.response(2, timeout=30)
        assert reply is not None and "trust the workspace" in reply["error"]["message"]
        # Nothing may appear: watch for the file a wrongly started run would write for a while
        # (a negative needs a window; the refusal itself came before it).
        end = time.monotonic() + 1
        while time.monotonic() < end:
            assert not (ws / "RAN").exists()
            time.sleep(0.02)
    finally:
        client.close()
