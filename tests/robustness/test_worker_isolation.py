"""Daemon robustness: the worker's own imports never resolve to workspace modules."""

from __future__ import annotations

from pathlib import Path

from dynamo_lens.config import load
from dynamo_lens.engine.analysis import Engine
from dynamo_lens.findings import Kind

MODEL = """\
import torch


def f(x):
    return torch.relu(x) + 1


def compile_example():
    return f, (torch.randn(4),)
"""


def test_a_workspace_shadowing_the_workers_modules_still_analyses(tmp_path: Path) -> None:
    boom = "raise RuntimeError('the workspace module was imported by the worker')\n"
    (tmp_path / "msgpack.py").write_text(boom)
    (tmp_path / "inspect.py").write_text(boom)
    (tmp_path / "dynamo_lens").mkdir()
    (tmp_path / "dynamo_lens" / "__init__.py").write_text(boom)
    (tmp_path / "model.py").write_text(MODEL)
    cfg, _ = load(tmp_path, {"backend": "eager"})
    with Engine(tmp_path, cfg) as eng:
        res = eng.analyze_file(tmp_path / "model.py", ["breaks"])
    assert [f for f in res.all_findings() if f.kind == Kind.ERROR] == []
    assert [r.target for r in res.reports] == ["model.py::compile_example"]
