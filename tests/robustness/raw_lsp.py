"""A raw JSON-RPC client for robustness tests: bytes on the daemon's stdio, no client library
to fix up what it sends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any


class RawClient:
    """JSON-RPC over the daemon's stdio, byte for byte: no client library to fix up params."""

    def __init__(self, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dynamo_lens", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=str(cwd),
            env={**os.environ, **(env or {})},
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

    def initialize(self, root: Path, *, trusted: bool, settings: dict[str, Any]) -> None:
        self.send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": None,
                    "rootUri": root.as_uri(),
                    "capabilities": {},
                    "initializationOptions": {"trusted": trusted, "settings": settings},
                },
            }
        )
        assert self.response(1) is not None
        self.send({"method": "initialized", "params": {}})

    def notifications(self, method: str) -> list[dict[str, Any]]:
        return [m for m in list(self.messages) if m.get("method") == method and "id" not in m]
