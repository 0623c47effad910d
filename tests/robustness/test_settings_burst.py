"""Daemon robustness: a burst of setting changes restarts the service once, and a change that
does not affect analysis restarts nothing."""

from __future__ import annotations

import time
from pathlib import Path

from support.raw_lsp import RawClient


def _wait_for(client: RawClient, text: str, n: int, timeout: float = 30) -> list[str]:
    end = time.monotonic() + timeout
    logs: list[str] = []
    while time.monotonic() < end:
        logs = [m["params"]["message"] for m in client.notifications("window/logMessage")]
        if sum(text in x for x in logs) >= n:
            break
        time.sleep(0.1)
    return logs


def test_twenty_changes_restart_once(tmp_path: Path) -> None:
    client = RawClient(tmp_path)
    try:
        client.initialize(tmp_path, trusted=True, settings={"checks": ["breaks"]})
        for i in range(20):
            change = {"settings": {"dynamoLens": {"timeout": 100 + i}}}
            client.send({"method": "workspace/didChangeConfiguration", "params": change})
        _wait_for(client, "restarting the analysis service", 1)
        # The event that ends the burst: a live-only change settles through the same timer,
        # so once it is applied without a restart, nothing of the burst is still pending (a
        # pending restart would have absorbed it and logged a second restart instead).
        change = {"settings": {"dynamoLens": {"keepDiagnosticsOnClose": False}}}
        client.send({"method": "workspace/didChangeConfiguration", "params": change})
        logs = _wait_for(client, "applied without a restart", 1)
        assert any("applied without a restart" in x for x in logs)
        assert sum("restarting the analysis service" in x for x in logs) == 1
    finally:
        client.close()
