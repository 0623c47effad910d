"""Daemon robustness: the status never says "ready" while analysis jobs are queued or run."""

from __future__ import annotations

import time
from pathlib import Path

from support.raw_lsp import RawClient

MODEL = """\
import torch


def f(x):
    return torch.relu(x) + 1


def compile_example():
    return f, (torch.randn(4),)
"""


def test_ready_means_idle(tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(MODEL)
    client = RawClient(tmp_path)
    try:
        client.initialize(tmp_path, trusted=True, settings={"checks": ["breaks"]})
        for i in range(3):  # opened while the worker still imports torch
            uri = (tmp_path / f"m{i}.py").as_uri()
            doc = {"uri": uri, "languageId": "python", "version": 1, "text": MODEL}
            client.send({"method": "textDocument/didOpen", "params": {"textDocument": doc}})
        end = time.monotonic() + 180
        while time.monotonic() < end:
            last = [n["params"] for n in client.notifications("dynamoLens/status")][-1:]
            if last and last[0]["state"] == "ready":
                break  # the three analyses have run
            time.sleep(0.2)
        statuses = [n["params"] for n in client.notifications("dynamoLens/status")]
        readies = [s for s in statuses if s["state"] == "ready"]
        assert readies, statuses
        assert all(s["jobs"] == 0 for s in readies), statuses
    finally:
        client.close()
