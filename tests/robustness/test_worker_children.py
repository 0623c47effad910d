"""Daemon robustness: what user code starts is the worker's: it dies with the worker, and its
memory counts against the budget."""

from __future__ import annotations

import os
import time
from pathlib import Path

from dynamo_lens.config import load
from dynamo_lens.engine.analysis import Engine

ESCAPES = """\
import os
import subprocess
import sys
from pathlib import Path

import torch

# A grandchild in its own session that would sleep forever, started at import.
child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(600)"],
    start_new_session=True,
)
Path(__file__).with_name("child.pid").write_text(str(child.pid))


def compile_example():
    return torch.nn.Linear(2, 2), (torch.randn(1, 2),)
"""

HOGS = """\
import subprocess
import sys
import time

import torch


def hog(x):
    # The memory is the child's, not the worker's.
    subprocess.run([sys.executable, "-c", "b = b'x' * (1500 * 2**20); import time; time.sleep(60)"])
    return x


def compile_example():
    return hog, (torch.randn(2),)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_children_in_their_own_session_die_with_the_worker(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(ESCAPES)
    cfg, _ = load(tmp_path, {"backend": "eager"})
    with Engine(tmp_path, cfg) as eng:
        eng.analyze_file(tmp_path / "m.py", ["breaks"])
        pid = int((tmp_path / "child.pid").read_text())
        assert _alive(pid)
    end = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < end:
        time.sleep(0.1)
    try:
        assert not _alive(pid)
    finally:
        if _alive(pid):
            os.kill(pid, 9)


def test_a_childs_memory_counts_against_the_limit(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(HOGS)
    cfg, _ = load(tmp_path, {"backend": "eager", "memory_limit_mb": 1200, "timeout": 50})
    with Engine(tmp_path, cfg) as eng:
        res = eng.analyze_file(tmp_path / "m.py", ["breaks"])
    (died,) = [f for f in res.all_findings() if "Analysis stopped" in f.message]
    assert "memory limit" in died.message
