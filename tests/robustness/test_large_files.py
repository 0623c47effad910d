"""Daemon robustness: a huge file gets one diagnostic saying it was skipped, and the daemon
keeps answering while it is edited."""

from __future__ import annotations

import time
from pathlib import Path

from support.raw_lsp import RawClient


def test_a_5_mb_file_is_skipped_with_one_diagnostic(tmp_path: Path) -> None:
    big = tmp_path / "big.py"
    text = "x = [\n" + "    1.0,\n" * 600_000 + "]\n"  # ~5 MB
    big.write_text(text)
    uri = big.as_uri()
    client = RawClient(tmp_path)
    try:
        client.initialize(tmp_path, trusted=True, settings={"checks": ["breaks"]})
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        client.send({"method": "textDocument/didOpen", "params": {"textDocument": doc}})
        for v in range(2, 6):  # edits of the whole buffer pile up no analyses
            change = {
                "textDocument": {"uri": uri, "version": v},
                "contentChanges": [{"text": text + f"y = {v}\n"}],
            }
            client.send({"method": "textDocument/didChange", "params": change})
        client.send(
            {
                "id": 2,
                "method": "textDocument/hover",
                "params": {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}},
            }
        )
        assert client.response(2, timeout=60) is not None
        end = time.monotonic() + 30
        pubs: list[dict[str, object]] = []
        while time.monotonic() < end and not pubs:
            pubs = [
                n["params"]
                for n in client.notifications("textDocument/publishDiagnostics")
                if n["params"]["uri"] == uri
            ]
            time.sleep(0.1)
        last = pubs[-1]["diagnostics"]
        assert isinstance(last, list) and len(last) == 1
        assert "skipped this file" in last[0]["message"] and last[0]["severity"] == 3
        client.send({"id": 3, "method": "shutdown"})
        assert client.response(3, timeout=30) is not None
    finally:
        client.close()


def test_a_burst_of_edits_to_a_big_file_is_one_pass_off_the_loop(tmp_path: Path) -> None:
    big = tmp_path / "big.py"
    body = "".join(f"def f{i}(x):\n    return x.item() + {i}\n\n" for i in range(3_000))
    big.write_text(body)  # ~120 KB, under the limit: hints are computed
    uri = big.as_uri()
    client = RawClient(tmp_path)
    try:
        client.initialize(tmp_path, trusted=False, settings={"checks": ["breaks"]})
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": body}
        client.send({"method": "textDocument/didOpen", "params": {"textDocument": doc}})
        for v in range(2, 22):
            change = {
                "textDocument": {"uri": uri, "version": v},
                "contentChanges": [{"text": f"# edit {v}\n" + body}],
            }
            client.send({"method": "textDocument/didChange", "params": change})
        # Requests are answered while the passes run (they are off the event loop).
        pos = {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 4}}
        client.send({"id": 2, "method": "textDocument/hover", "params": pos})
        assert client.response(2, timeout=60) is not None
        end = time.monotonic() + 60
        versions: list[object] = []
        while time.monotonic() < end and 21 not in versions:
            versions = [
                n["params"].get("version")
                for n in client.notifications("textDocument/publishDiagnostics")
                if n["params"]["uri"] == uri
            ]
            time.sleep(0.1)
        assert 21 in versions  # the last edit's hints were published...
        assert len(versions) <= 4, versions  # ...and the burst was not one pass per edit
    finally:
        client.close()


def test_keystrokes_in_a_huge_file_are_not_applied_and_a_save_resyncs(tmp_path: Path) -> None:
    big = tmp_path / "big.py"
    text = "x = [\n" + "    1.0,\n" * 600_000 + "]\n"
    big.write_text(text)
    uri = big.as_uri()
    client = RawClient(tmp_path)
    try:
        client.initialize(tmp_path, trusted=False, settings={"checks": ["breaks"]})
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        client.send({"method": "textDocument/didOpen", "params": {"textDocument": doc}})
        at = {"line": 0, "character": 0}
        for v in range(2, 40):
            change = {
                "textDocument": {"uri": uri, "version": v},
                "contentChanges": [{"range": {"start": at, "end": at}, "text": "#"}],
            }
            client.send({"method": "textDocument/didChange", "params": change})
        # The user cut the file down to a small model and saved: disk is the truth again.
        big.write_text("def f(x):\n    return x.item()\n")
        client.send({"method": "textDocument/didSave", "params": {"textDocument": {"uri": uri}}})
        end = time.monotonic() + 60
        last = "skipped"
        while time.monotonic() < end and "skipped" in last:
            pubs = [
                str(n["params"]["diagnostics"])
                for n in client.notifications("textDocument/publishDiagnostics")
                if n["params"]["uri"] == uri
            ]
            last = pubs[-1] if pubs else "skipped"
            time.sleep(0.1)
        assert "skipped" not in last  # the saved, small text is what is now analysed
    finally:
        client.close()
