"""Daemon robustness: every request gets a response or an LSP error, whatever its params."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any


class RawClient:
    """JSON-RPC over the daemon's stdio, byte for byte: no client library to fix up params."""

    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dynamo_lens", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=str(cwd),
        )
        self.messages: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while (line := out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                return
            self.messages.append(json.loads(out.read(length)))

    def send(self, msg: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def response(self, rid: int, timeout: float = 20.0) -> dict[str, Any] | None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for m in list(self.messages):
                if m.get("id") == rid and "method" not in m:
                    return m
            time.sleep(0.05)
        return None

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def test_requests_with_bad_params_are_answered(tmp_path: Path) -> None:
    client = RawClient(tmp_path)
    try:
        client.send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": None,
                    "rootUri": tmp_path.as_uri(),
                    "capabilities": {},
                    "initializationOptions": {"trusted": False, "settings": {"checks": []}},
                },
            }
        )
        assert client.response(1) is not None
        client.send({"method": "initialized", "params": {}})
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
