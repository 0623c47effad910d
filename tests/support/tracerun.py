"""Recording torch's structured trace of a real script, for the tests of runs and traces."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# A data-dependent branch at line 6: the one graph break torch reports.
BREAK_SCRIPT = """\
import torch


def step(x):
    y = x * 2
    if y.sum() > 0:  # data-dependent: a break
        y = y + 1
    return y


torch.compile(step, backend="eager")(torch.ones(8))
"""


def record_trace(cwd: Path, script: str, trace: Path) -> Path:
    """Runs ``python script`` in ``cwd`` with ``TORCH_TRACE=trace``, as a user would."""
    subprocess.run(
        [sys.executable, script],
        cwd=cwd,
        env={**os.environ, "TORCH_TRACE": str(trace)},
        check=True,
        capture_output=True,
    )
    return trace


def break_trace(tmp: Path) -> tuple[Path, Path]:
    """A workspace ``tmp/ws`` whose ``train.py`` breaks once (``BREAK_SCRIPT``), and the trace
    of its run in ``tmp/trace``: (workspace, trace folder)."""
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "train.py").write_text(BREAK_SCRIPT)
    return ws, record_trace(ws, "train.py", tmp / "trace")
