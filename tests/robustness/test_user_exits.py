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


HARD_EXIT = """\
import os

import torch


def leaves(x):
    os._exit(7)


def compile_example():
    return leaves, (torch.randn(2),)
"""


def test_a_dead_worker_is_replaced_when_work_comes_not_for_nobody(tmp_path: Path) -> None:
    """A command line or a test that ends after a worker died must not start a replacement
    that imports torch for nothing; the daemon's engine replaces at once (warm for the next
    save), and both run the next job on a live worker."""
    (tmp_path / "m.py").write_text(HARD_EXIT)
    (tmp_path / "ok.py").write_text(
        "import torch\n\n\ndef compile_example():\n    return torch.relu, (torch.randn(2),)\n"
    )
    cfg, _ = load(tmp_path, {"backend": "eager"})
    for at_once in (False, True):
        with Engine(tmp_path, cfg, replace_at_once=at_once) as eng:
            res = eng.analyze_file(tmp_path / "m.py", ["breaks"])
            assert any("os._exit(7)" in f.message for f in res.all_findings()), at_once
            live = [w for w in eng.pool._all if w.alive]
            assert len(live) == (1 if at_once else 0), (at_once, live)
            ok = eng.analyze_file(tmp_path / "ok.py", ["breaks"])
            assert [r.graph_count for r in ok.reports] == [1], at_once
            assert eng.pool.restarts == 1
