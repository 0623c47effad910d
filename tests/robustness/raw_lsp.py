"""A raw JSON-RPC client for robustness tests: bytes on the daemon's stdio, no client library
to fix up what it sends."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any


class RawClient:
    """JSON-RPC over the daemon's stdio, byte for byte: no client library to fix up params.
    ``RawClient.tcp(port)`` speaks to a ``serve --tcp`` daemon instead."""

    def __init__(self, cwd: Path | None, env: dict[str, str] | None = None) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        if cwd is not None:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "dynamo_lens", "serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=str(cwd),
                env={**os.environ, **(env or {})},
            )
            self._in, self._out = self.proc.stdout, self.proc.stdin
        self.messages: list[dict[str, Any]] = []
        if cwd is not None:
            threading.Thread(target=self._read, daemon=True).start()

    @classmethod
    def tcp(cls, port: int) -> RawClient:
        client = cls(None)
        client.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        client.sock.settimeout(None)
        client._in = client.sock.makefile("rb")
        client._out = client.sock.makefile("wb")
        threading.Thread(target=client._read, daemon=True).start()
        return client

    def _read(self) -> None:
        out = self._in
        assert out is not None
        while True:
            length = 0
            try:
                line = out.readline()
                while line not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                    line = out.readline()
            except OSError:
                return
            if not line:
                return
            self.messages.append(json.loads(out.read(length)))

    def send(self, msg: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
        assert self._out is not None
        self._out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self._out.flush()

    def response(self, rid: int, timeout: float = 20.0) -> dict[str, Any] | None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for m in list(self.messages):
                if m.get("id") == rid and "method" not in m:
                    return m
            time.sleep(0.002)
        return None

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()

    def initialize(
        self, root: Path, *, trusted: bool, settings: dict[str, Any], **opts: Any
    ) -> dict[str, Any]:
        self.send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": None,
                    "rootUri": root.as_uri(),
                    "capabilities": {},
                    "initializationOptions": {"trusted": trusted, "settings": settings, **opts},
                },
            }
        )
        reply = self.response(1)
        assert reply is not None
        if "result" in reply:
            self.send({"method": "initialized", "params": {}})
        return reply

    def notifications(self, method: str) -> list[dict[str, Any]]:
        return [m for m in list(self.messages) if m.get("method") == method and "id" not in m]
