"""Loading a run's trace in the editor: findings with provenance, and in Restricted Mode too,
since reading a trace runs no workspace code."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from raw_lsp import RawClient

SCRIPT = """\
import torch


def step(x):
    y = x * 2
    if y.sum() > 0:  # data-dependent: a break
        y = y + 1
    return y


torch.compile(step, backend="eager")(torch.ones(8))
"""


def test_a_trace_loads_in_restricted_mode_with_its_provenance(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "train.py").write_text(SCRIPT)
    trace = tmp_path / "trace"
    subprocess.run(
        [sys.executable, "train.py"],
        cwd=ws,
        env={**os.environ, "TORCH_TRACE": str(trace)},
        check=True,
        capture_output=True,
    )
    (ws / "train.py").write_text(SCRIPT + "open('RAN', 'w').write('ran')\n")  # must not run
    uri = (ws / "train.py").as_uri()
    client = RawClient(ws)
    try:
        client.initialize(ws, trusted=False, settings={"checks": ["breaks"]})
        args = {"command": "dynamoLens.server.loadTrace", "arguments": [str(trace)]}
        client.send({"id": 2, "method": "workspace/executeCommand", "params": args})
        reply = client.response(2, timeout=60)
        assert reply is not None and reply["result"]["findings"] == 1, reply
        end = time.monotonic() + 30
        diags: list[dict[str, object]] = []
        while time.monotonic() < end and not diags:
            for n in client.notifications("textDocument/publishDiagnostics"):
                if n["params"]["uri"] == uri and n["params"]["diagnostics"]:
                    diags = n["params"]["diagnostics"]
            time.sleep(0.1)
        (d,) = diags
        assert d["range"]["start"]["line"] == 5 and d["code"] == "GB0170"
        assert "seen in trace trace" in str(d["message"])
        assert not (ws / "RAN").exists()
    finally:
        client.close()
