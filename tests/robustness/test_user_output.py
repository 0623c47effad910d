"""Daemon robustness: user output is bounded per job, and a dead job shows its own output."""

from __future__ import annotations

from pathlib import Path

from dynamo_lens.config import load
from dynamo_lens.engine.analysis import Engine
from dynamo_lens.engine.pool import LOG_LINES_PER_JOB

QUIET_THEN_PRINTS = """\
import torch

print("output of the first file")


def compile_example():
    return torch.nn.Linear(2, 2), (torch.randn(1, 2),)
"""
DIES = """\
import os
import signal

import torch


def boom(x):
    print("output of the file that died")
    os.kill(os.getpid(), signal.SIGKILL)


def compile_example():
    return boom, (torch.randn(2),)
"""
FLOODS = """\
import torch

for i in range(200_000):
    print("line", i)


def compile_example():
    return torch.nn.Linear(2, 2), (torch.randn(1, 2),)
"""


def test_a_dead_job_shows_its_own_output_not_the_previous_files(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(QUIET_THEN_PRINTS)
    (tmp_path / "b.py").write_text(DIES)
    cfg, _ = load(tmp_path, {"backend": "eager"})
    with Engine(tmp_path, cfg) as eng:
        eng.analyze_file(tmp_path / "a.py", ["breaks"])
        res = eng.analyze_file(tmp_path / "b.py", ["breaks"])
    (died,) = [f for f in res.all_findings() if "Analysis stopped" in f.message]
    assert "output of the file that died" in died.explanation
    assert "output of the first file" not in died.explanation


def test_a_flood_of_output_is_counted_not_logged_line_by_line(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text(FLOODS)
    logs: list[str] = []
    cfg, _ = load(tmp_path, {"backend": "eager"})
    with Engine(tmp_path, cfg, on_log=logs.append) as eng:
        res = eng.analyze_file(tmp_path / "f.py", ["breaks"])
    assert res.reports
    user_lines = [x for x in logs if x.startswith("[user output]")]
    assert len(user_lines) <= 2 * LOG_LINES_PER_JOB  # discover and analyze jobs
    assert any("printed 200000 lines" in x for x in logs)


HUGE = """\
import torch


def huge(x):
    raise ValueError("x" * 70_000_000)


def compile_example():
    return huge, (torch.randn(2),)
"""


def test_a_70_mb_exception_message_arrives_truncated(tmp_path: Path) -> None:
    (tmp_path / "h.py").write_text(HUGE)
    (tmp_path / "a.py").write_text(QUIET_THEN_PRINTS)
    cfg, _ = load(tmp_path, {"backend": "eager"})
    with Engine(tmp_path, cfg) as eng:
        res = eng.analyze_file(tmp_path / "h.py", ["breaks"])
        after = eng.analyze_file(tmp_path / "a.py", ["breaks"])
    (err,) = [f for f in res.all_findings() if "ValueError" in f.message]
    assert len(err.message) < 1000 and len(err.explanation) < 20_000
    assert "truncated" in err.explanation
    assert after.reports and not [f for f in after.all_findings() if "timed out" in f.message]
