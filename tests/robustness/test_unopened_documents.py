"""Daemon robustness: notifications about documents the client never opened do nothing."""

from __future__ import annotations

import time
from pathlib import Path

from raw_lsp import RawClient

EVIL = """\
from pathlib import Path

Path(__file__).with_name("RAN").write_text("user code ran")


def compile_example():
    raise SystemExit
"""
GOOD = """\
import torch


def compile_example():
    return torch.nn.Linear(4, 4), (torch.randn(2, 4),)
"""


def _doc(uri: str, text: str) -> dict[str, object]:
    return {"uri": uri, "languageId": "python", "version": 1, "text": text}


def test_save_and_change_of_unopened_documents_are_ignored(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "evil.py").write_text(EVIL)
    (ws / "good.py").write_text(GOOD)
    evil, good = (ws / "evil.py").as_uri(), (ws / "good.py").as_uri()
    client = RawClient(ws)
    try:
        client.initialize(ws, trusted=True, settings={"checks": ["breaks"], "backend": "eager"})
        client.send({"method": "textDocument/didSave", "params": {"textDocument": {"uri": evil}}})
        client.send(
            {
                "method": "textDocument/didChange",
                "params": {
                    "textDocument": {"uri": evil, "version": 2},
                    "contentChanges": [{"text": EVIL}],
                },
            }
        )
        client.send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": evil}}})
        # A real document afterwards: once its analysis is published, the earlier
        # notifications have long been handled.
        client.send(
            {"method": "textDocument/didOpen", "params": {"textDocument": _doc(good, GOOD)}}
        )
        end = time.monotonic() + 180
        published: set[str] = set()
        while time.monotonic() < end and good not in published:
            published = {
                n["params"]["uri"] for n in client.notifications("textDocument/publishDiagnostics")
            }
            time.sleep(0.2)
        assert good in published
        assert evil not in published
        assert not (ws / "RAN").exists()
    finally:
        client.close()
