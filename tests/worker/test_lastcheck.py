"""The check's trace stands in for the verification's trace of the original only when that
original is the one traced; and a target that comes compiled has an eager baseline that is not."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from dynamo_lens.texts.locate import Workspace
from dynamo_lens.worker import lastcheck
from dynamo_lens.worker.breaks import find_breaks
from dynamo_lens.worker.usercode import (
    Call,
    eager_of,
    import_file,
    purge_workspace_modules,
)

MODEL = """import torch

from helper import scale


def step(x):
    y = scale(x)
    print("step")  # the break
    return y + 1
"""
HELPER = "def scale(x):\n    return x * 2\n"


@pytest.fixture()
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "helper.py").write_text(HELPER)
    w = Workspace(tmp_path)
    purge_workspace_modules(w)
    for name in ("model", "helper"):  # another test's workspace had modules of these names
        sys.modules.pop(name, None)
    return w


def _checked(ws: Workspace) -> tuple[Path, Call]:
    path = ws.root / "model.py"
    fn = import_file(path, ws).step
    call = Call((torch.ones(3),), {})
    found = find_breaks(fn, call, ws, "step").findings
    assert [f.line for f in found if f.is_break] == [8]
    lastcheck.remember(str(path), "step", call, ws, found)
    return path, call


def test_the_checks_trace_is_recalled_for_the_original_it_traced(ws: Workspace) -> None:
    path, call = _checked(ws)
    got = lastcheck.recall(str(path), "step", call, ws)
    assert got is not None and [f.line for f in got if f.is_break] == [8]
    # Other inputs of the same shapes describe the same call.
    assert lastcheck.recall(str(path), "step", Call((torch.zeros(3),), {}), ws) is not None


def test_an_edit_of_an_imported_workspace_file_means_tracing_again(ws: Workspace) -> None:
    path, call = _checked(ws)
    (ws.root / "helper.py").write_text(HELPER.replace("* 2", "* 3"))
    assert lastcheck.recall(str(path), "step", call, ws) is None


def test_other_settings_or_shapes_mean_tracing_again(ws: Workspace) -> None:
    path, call = _checked(ws)
    assert lastcheck.recall(str(path), "step", Call((torch.ones(4),), {}), ws) is None
    assert lastcheck.recall(str(path), "other", call, ws) is None
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        assert lastcheck.recall(str(path), "step", call, ws) is None


def test_a_compiled_target_has_an_eager_baseline_that_compiles_nothing() -> None:
    compiles: list[int] = []

    def counting(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> object:
        compiles.append(1)
        return gm.forward

    @torch.compile(backend=counting)
    def double(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    torch._dynamo.reset()
    assert torch.equal(eager_of(double)(torch.ones(2)), torch.full((2,), 2.0))
    assert compiles == []
    double(torch.ones(2))
    assert compiles == [1]
    lin = torch.nn.Linear(2, 2)
    assert eager_of(torch.compile(lin, backend=counting)) is lin
    assert eager_of(lin) is lin
