"""Daemon robustness: notifications about documents the client never opened do nothing."""

from __future__ import annotations

import time
from pathlib import Path

from support.raw_lsp import RawClient

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


def test_untitled_buffers_and_notebook_cells_never_run(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "good.py").write_text(GOOD)
    # Untitled and notebook URIs whose paths name a real file: still not files to run.
    (ws / "evil.py").write_text(EVIL)
    path = (ws / "evil.py").as_posix()
    uris = [f"untitled:{path}", f"vscode-notebook-cell:{path}#W0sZmlsZQ%3D%3D"]
    good = (ws / "good.py").as_uri()
    client = RawClient(ws)
    try:
        client.initialize(ws, trusted=True, settings={"checks": ["breaks"], "backend": "eager"})
        for u in uris:
            client.send(
                {"method": "textDocument/didOpen", "params": {"textDocument": _doc(u, EVIL)}}
            )
            client.send({"method": "textDocument/didSave", "params": {"textDocument": {"uri": u}}})
        client.send(
            {"method": "textDocument/didOpen", "params": {"textDocument": _doc(good, GOOD)}}
        )
        end = time.monotonic() + 180
        logs: list[str] = []
        while time.monotonic() < end and len([x for x in logs if "not analysed" in x]) < 2:
            logs = [n["params"]["message"] for n in client.notifications("window/logMessage")]
            time.sleep(0.2)
        assert sum("not analysed" in x for x in logs) == 2
        published = {
            n["params"]["uri"] for n in client.notifications("textDocument/publishDiagnostics")
        }
        assert not any(u in published for u in uris)
        assert not (ws / "RAN").exists()
    finally:
        client.close()


def test_a_file_outside_the_workspace_gets_static_hints_only(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir()
    outside.mkdir()
    (ws / "good.py").write_text(GOOD)
    (outside / "evil.py").write_text(EVIL + "\n\ndef f(x):\n    return x.item()\n")
    evil, good = (outside / "evil.py").as_uri(), (ws / "good.py").as_uri()
    client = RawClient(ws)
    try:
        client.initialize(ws, trusted=True, settings={"checks": ["breaks"], "backend": "eager"})
        text = (outside / "evil.py").read_text()
        client.send(
            {"method": "textDocument/didOpen", "params": {"textDocument": _doc(evil, text)}}
        )
        client.send({"method": "textDocument/didSave", "params": {"textDocument": {"uri": evil}}})
        client.send(
            {"method": "textDocument/didOpen", "params": {"textDocument": _doc(good, GOOD)}}
        )
        end = time.monotonic() + 180
        logs: list[str] = []
        while time.monotonic() < end and not any("static hints only" in x for x in logs):
            logs = [n["params"]["message"] for n in client.notifications("window/logMessage")]
            time.sleep(0.2)
        assert any("outside the workspace, static hints only" in x for x in logs)
        pubs = [
            n["params"]
            for n in client.notifications("textDocument/publishDiagnostics")
            if n["params"]["uri"] == evil
        ]
        assert pubs and all(d["source"] == "dynamo-lens" for p in pubs for d in p["diagnostics"])
        assert not (outside / "RAN").exists()
    finally:
        client.close()
