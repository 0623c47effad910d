"""Daemon robustness: `serve --tcp` cannot be taken over by another local process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.raw_lsp import RawClient

TOKEN = "test-token-0123456789"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dynamo_lens", "serve", "--tcp", f"127.0.0.1:{port}"],
        cwd=str(tmp_path),
        env={**os.environ, "DYNAMO_LENS_TOKEN": TOKEN},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # the daemon says when it listens
        if b"listening on" in line:
            break
    yield proc, port
    proc.kill()
    proc.wait()


def test_one_client_one_initialize_and_only_workspace_files(
    daemon: tuple[subprocess.Popen[bytes], int], tmp_path: Path
) -> None:
    _, port = daemon
    ws, outside = tmp_path / "ws", tmp_path / "outside.py"
    ws.mkdir()
    outside.write_text("open('RAN', 'w').write('ran')\n")
    first = RawClient.tcp(port)
    try:
        reply = first.initialize(ws, trusted=True, settings={"checks": ["breaks"]}, token=TOKEN)
        assert "result" in reply
        # A second local process gets no session: nobody listens any more.
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).recv(1) or (
                _ for _ in ()
            ).throw(OSError("closed"))
        # The first client cannot re-initialize (to change trust or roots)...
        first.send({"id": 2, "method": "initialize", "params": {"capabilities": {}}})
        again = first.response(2)
        assert again is not None and "error" in again
        # ...nor run a file outside the workspace that is not open in the editor.
        args = {"command": "dynamoLens.checkFile", "arguments": [outside.as_uri()]}
        first.send({"id": 3, "method": "workspace/executeCommand", "params": args})
        refused = first.response(3)
        assert refused is not None and "error" in refused
        assert not (tmp_path / "RAN").exists()
    finally:
        first.close()


def test_a_client_without_the_token_is_refused(
    daemon: tuple[subprocess.Popen[bytes], int], tmp_path: Path
) -> None:
    proc, port = daemon
    client = RawClient.tcp(port)
    try:
        client.send({"id": 5, "method": "workspace/executeCommand", "params": {"command": "x"}})
        early = client.response(5)
        assert early is not None and early["error"]["code"] == -32002  # not initialized
        reply = client.initialize(tmp_path, trusted=True, settings={}, token="wrong")
        assert "error" in reply
        assert proc.wait(timeout=10) == 1  # and the daemon left
    finally:
        client.close()
