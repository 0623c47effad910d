"""Daemon robustness: one file's side effects never reach another file's results."""

from __future__ import annotations

from pathlib import Path

import pytest
from dynamo_lens.config import load
from dynamo_lens.engine.analysis import Engine
from dynamo_lens.findings import FileResult, Kind

PATCHES = """\
import builtins

import torch

_real_len = builtins.len
builtins.len = lambda obj: 0 if isinstance(obj, list) else _real_len(obj)  # a global patch


def compile_example():
    return torch.nn.Linear(2, 2), (torch.randn(1, 2),)
"""

INNOCENT = """\
import torch


def f(x):
    parts = [x, x]
    if len(parts) != 2:
        raise RuntimeError("len is broken")
    return parts[0] + parts[1]


def compile_example():
    return f, (torch.randn(2),)
"""

CHDIRS = """\
import os

import torch


def f(x):
    os.chdir("/")
    return x + 1


def compile_example():
    return f, (torch.randn(2),)
"""


def _in_turn(root: Path, **files: str) -> tuple[list[FileResult], list[str]]:
    """``files`` (name without ``.py`` -> source) written to ``root`` and analysed for breaks
    one after the other by one engine: their results, and what the engine logged."""
    for name, text in files.items():
        (root / f"{name}.py").write_text(text)
    logs: list[str] = []
    cfg, _ = load(root, {"backend": "eager"})
    with Engine(root, cfg, on_log=logs.append) as eng:
        return [eng.analyze_file(root / f"{n}.py", ["breaks"]) for n in files], logs


def test_a_patched_builtin_does_not_reach_the_next_file(tmp_path: Path) -> None:
    (tainted, res), logs = _in_turn(tmp_path, patches=PATCHES, innocent=INNOCENT)
    assert tainted.interrupted  # shown, never cached
    assert [f for f in res.all_findings() if f.kind == Kind.ERROR] == []
    assert any("worker restarted" in x and "builtins.len" in x for x in logs), logs


def test_a_changed_working_directory_is_a_taint(tmp_path: Path) -> None:
    (tmp_path / "chdirs.py").write_text(CHDIRS)
    logs: list[str] = []
    cfg, _ = load(tmp_path, {"backend": "eager"})
    with Engine(tmp_path, cfg, on_log=logs.append) as eng:
        res = eng.analyze_file(tmp_path / "chdirs.py", ["breaks"])
    assert res.interrupted
    assert any("working directory" in x for x in logs)


def test_workers_are_recycled_after_many_jobs(tmp_path: Path) -> None:
    import dynamo_lens.engine.pool as pool

    (tmp_path / "innocent.py").write_text(INNOCENT)
    logs: list[str] = []
    cfg, _ = load(tmp_path, {"backend": "eager"})
    old = pool.MAX_JOBS_PER_WORKER
    pool.MAX_JOBS_PER_WORKER = 2  # discover + analyze: one file's worth
    try:
        with Engine(tmp_path, cfg, on_log=logs.append) as eng:
            first = eng.analyze_file(tmp_path / "innocent.py", ["breaks"])
            second = eng.analyze_file(tmp_path / "innocent.py", ["breaks"])
    finally:
        pool.MAX_JOBS_PER_WORKER = old
    assert first.reports and second.reports and not second.interrupted
    assert any("recycled after 2 jobs" in x for x in logs), logs


FINDER = """\
import sys

import torch
import transformers


class Redirect:
    def find_spec(self, name, path=None, target=None):
        return None  # a finder of the user's own: it could answer any later import


# Disguised as the finder transformers adds (which this import brought too): still the user's.
Redirect.__module__ = "transformers.utils.import_utils"
Redirect.__qualname__ = "_LegacyModuleAliasFinder"
sys.meta_path.insert(0, Redirect())


def compile_example():
    return torch.nn.Linear(2, 2), (torch.randn(1, 2),)
"""

WITH_TRANSFORMERS = """\
import torch
import transformers  # adds an import finder of its own (legacy module aliases) as it loads


def compile_example():
    return torch.nn.Linear(2, 2), (torch.randn(1, 2),)
"""


def test_an_import_finder_is_a_taint_unless_a_library_brings_it(tmp_path: Path) -> None:
    """User code's own finder replaces the worker, even under the name of transformers' own;
    the one transformers adds as it is imported does not (it replaced the worker after every job
    of every file importing transformers, and none of their results was cached)."""
    pytest.importorskip("transformers")
    (res, after), logs = _in_turn(tmp_path, finder=FINDER, innocent=INNOCENT)
    assert res.interrupted and any("sys.meta_path changed" in x for x in logs), logs
    assert not after.interrupted
    (first, again), logs = _in_turn(tmp_path, hf=WITH_TRANSFORMERS, innocent=INNOCENT)
    assert first.reports and not first.interrupted, logs
    assert again.reports and not again.interrupted, logs
    assert not any("restarted" in x or "left changed" in x for x in logs), logs
