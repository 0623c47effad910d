"""A raw JSON-RPC client for robustness tests: bytes on the daemon's stdio, no client library
to fix up what it sends."""

from __future__ import annotations

import json
import os
import resource
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

    def __init__(
        self, cwd: Path | None, env: dict[str, str] | None = None, *, limit_mb: int | None = None
    ) -> None:
        """``limit_mb``: the daemon's address space, so a daemon that would swallow a device
        fails its test instead of the machine (only for daemons that start no worker)."""
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None

        def limit() -> None:
            if limit_mb is not None:
                resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))

        if cwd is not None:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "dynamo_lens", "serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=str(cwd),
                env={**os.environ, **(env or {})},
                preexec_fn=limit,
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

    # -- conveniences for the robustness tests ---------------------------------------------
    _next_id = 100

    def request(self, method: str, params: Any, timeout: float = 60.0) -> dict[str, Any] | None:
        """Send a request and wait for its answer (None: none came within ``timeout``)."""
        RawClient._next_id += 1
        rid = RawClient._next_id
        self.send({"id": rid, "method": method, "params": params})
        return self.response(rid, timeout)

    def start_command(self, command: str, *args: Any, token: str | None = None) -> int:
        """Send ``dynamoLens.server.<command>`` without waiting; its request id."""
        RawClient._next_id += 1
        rid = RawClient._next_id
        name = f"dynamoLens.server.{command}"
        params: dict[str, Any] = {"command": name, "arguments": list(args)}
        if token is not None:
            params["workDoneToken"] = token
        self.send({"id": rid, "method": "workspace/executeCommand", "params": params})
        return rid

    def command(self, command: str, *args: Any, timeout: float = 60.0) -> dict[str, Any] | None:
        return self.response(self.start_command(command, *args), timeout)

    def hover(self, uri: str, line: int, timeout: float = 30.0) -> dict[str, Any] | None:
        params = {"textDocument": {"uri": uri}, "position": {"line": line, "character": 0}}
        return self.request("textDocument/hover", params, timeout)

    def open(self, path: Path, text: str | None = None, version: int = 1) -> str:
        uri = path.as_uri()
        doc = {
            "uri": uri,
            "languageId": "python",
            "version": version,
            "text": path.read_text() if text is None else text,
        }
        self.send({"method": "textDocument/didOpen", "params": {"textDocument": doc}})
        return uri

    def diagnostics(self, uri: str) -> list[dict[str, Any]] | None:
        """The last diagnostics published for ``uri`` (None: never published)."""
        for n in reversed(self.notifications("textDocument/publishDiagnostics")):
            if n["params"]["uri"] == uri:
                return list(n["params"]["diagnostics"])
        return None

    def wait(self, pred: Any, timeout: float = 60.0) -> bool:
        """Until ``pred()`` holds (the event), or ``timeout`` passes (a hang)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred():
                return True
            time.sleep(0.05)
        return bool(pred())

    def peak_rss_mib(self) -> float:
        """The daemon's peak resident memory so far."""
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0
