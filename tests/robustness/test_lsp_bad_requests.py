"""Daemon robustness: every request gets a response or an LSP error, whatever its params."""

from __future__ import annotations

from pathlib import Path

from support.raw_lsp import RawClient


def test_requests_with_bad_params_are_answered(tmp_path: Path) -> None:
    client = RawClient(tmp_path)
    try:
        client.initialize(tmp_path, trusted=False, settings={"checks": []})
        bad = [
            {"id": 2, "method": "textDocument/hover", "params": 42},
            {"id": 3, "method": "textDocument/hover"},
            {"id": 4, "method": "textDocument/codeLens", "params": {"textDocument": 7}},
            {"id": 5, "method": "workspace/executeCommand", "params": 42},
            {"id": 6, "method": "dynamoLens/noSuchRequest", "params": {}},
        ]
        for msg in bad:
            client.send(msg)
        for msg in bad:
            reply = client.response(msg["id"])
            assert reply is not None, f"no answer to {msg}"
            assert "error" in reply or "result" in reply
        client.send({"id": 7, "method": "shutdown"})
        assert client.response(7) is not None  # and the daemon is still serving
    finally:
        client.close()
