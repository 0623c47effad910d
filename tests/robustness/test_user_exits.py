"""Daemon robustness: SystemExit, KeyboardInterrupt and exceptions whose __str__ raises, in
user code, are user errors at the user's line, never "internal error"."""

from __future__ import annotations

from pathlib import Path

from dynamo_lens.config import load
from dynamo_lens.engine.analysis import Engine
from dynamo_lens.findings import Kind

MODEL = """\
import sys

import torch


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no")


def exits(x):
    sys.exit(3)  # line 12


def interrupts(x):
    raise KeyboardInterrupt  # line 16


def unprintable(x):
    raise Unprintable()  # line 20


def compile_example_exit():
    return exits, (torch.randn(2),)


def compile_example_interrupt():
    return interrupts, (torch.randn(2),)


def compile_example_unprintable():
    return unprintable, (torch.randn(2),)
"""


def test_user_exits_are_user_errors_at_their_line(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(MODEL)
    cfg, _ = load(tmp_path, {"backend": "eager"})
    with Engine(tmp_path, cfg) as eng:
        res = eng.analyze_file(tmp_path / "m.py", ["breaks"])
    errors = [f for f in res.all_findings() if f.kind == Kind.ERROR]
    assert not [f for f in errors if "internal error" in f.message], [f.message for f in errors]
    by_line = {f.line: f.message for f in errors}
    assert "SystemExit" in by_line[12]
    assert "KeyboardInterrupt" in by_line[16]
    assert "Unprintable" in by_line[20]
    assert len(res.reports) == 3  # and the worker lived on through all three
