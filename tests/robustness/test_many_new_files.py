"""Daemon robustness: 2,000 new files on disk cost no thread each (one debouncer)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from support.raw_lsp import RawClient


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def test_two_thousand_new_files_do_not_start_a_thread_each(tmp_path: Path) -> None:
    client = RawClient(tmp_path)
    assert client.proc is not None
    try:
        client.initialize(tmp_path, trusted=True, settings={"checks": ["breaks"]})
        end = time.monotonic() + 60  # bounds a hang: the event is the watcher's log line
        while not any(
            "for changes on disk" in m["params"]["message"]
            for m in client.notifications("window/logMessage")
        ):
            assert time.monotonic() < end, "the watcher never started"
            time.sleep(0.01)
        before = _threads(client.proc.pid)
        peak = before
        for i in range(2000):
            (tmp_path / f"gen_{i}.py").write_text(f"x = {i}\n")
            if i % 200 == 0:
                peak = max(peak, _threads(client.proc.pid))
        end = time.monotonic() + 3
        while time.monotonic() < end:
            peak = max(peak, _threads(client.proc.pid))
            time.sleep(0.05)
        assert peak - before < 20, (before, peak)
        client.send({"id": 2, "method": "shutdown"})
        assert client.response(2, timeout=30) is not None
    finally:
        client.close()
