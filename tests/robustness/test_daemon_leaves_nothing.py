"""Daemon robustness: a daemon that ran user code and shut down leaves no file behind."""

from __future__ import annotations

import time
from pathlib import Path

from support.raw_lsp import RawClient

MODEL = """\
import torch


def compile_example():
    return torch.nn.Linear(4, 4), (torch.randn(2, 4),)
"""


def test_shutdown_leaves_no_crash_file(tmp_path: Path) -> None:
    ws, tmp = tmp_path / "ws", tmp_path / "tmp"
    ws.mkdir()
    tmp.mkdir()
    (ws / "m.py").write_text(MODEL)
    client = RawClient(ws, env={"TMPDIR": str(tmp)})
    try:
        client.initialize(ws, trusted=True, settings={"checks": ["breaks"], "backend": "eager"})
        uri = (ws / "m.py").as_uri()
        client.send(
            {
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {
                        "uri": uri,
                        "languageId": "python",
                        "version": 1,
                        "text": MODEL,
                    }
                },
            }
        )
        end = time.monotonic() + 120
        while time.monotonic() < end and not any(tmp.iterdir()):
            time.sleep(0.1)  # the worker starts at `initialized`: its crash file appears
        assert any(tmp.iterdir()), "the worker's crash file should exist while it runs"
        client.send({"id": 9, "method": "shutdown"})
        assert client.response(9) is not None
        client.send({"method": "exit"})
        client.proc.wait(timeout=10)
    finally:
        client.close()
    assert sorted(p.name for p in tmp.iterdir()) == []
