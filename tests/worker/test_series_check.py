"""A recompile fix's verification reads the recompile check's answer from the compiled series
it makes of each version anyway (the declared variants first, compiled as the check compiles
them): the same lines, frames and recompiles as the check's own run, one compile instead of
two. A compile another version left warm on a code object both share is not a recompile."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from dynamo_lens.findings import Frame
from dynamo_lens.texts.locate import Workspace
from dynamo_lens.worker.compiledseries import compiled_series
from dynamo_lens.worker.probecalls import runs_with_grad
from dynamo_lens.worker.usercode import Call, Target, import_file
from dynamo_lens.worker.verifyrecompiles import RecompileCheck, recompile_lines, series_check
from dynamo_lens.worker.verifyruns import series_of
from support.model_workspace import model_workspace

MODEL = """import torch
from torch import nn


class Rows(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, scale):
        return self.lin(x).relu() * scale


def stack():
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU())


def fails_on_six(x):
    if x.shape[0] == 6:
        raise ValueError("six rows")
    return x * 2
"""
HOW = RecompileCheck(None, 8, 4)


@pytest.fixture()
def ws(tmp_path: Path) -> Workspace:
    return model_workspace(tmp_path, MODEL)


def _target(ws: Workspace, fn_name: str, calls: list[Call]) -> Target:
    m = import_file(ws.root / "model.py", ws)
    fn = getattr(m, fn_name)
    fn = fn() if fn_name == "stack" else fn
    return Target("compile_example", fn, calls, str(ws.root / "model.py"), 1, "example")


def _read(t: Target, ws: Workspace, *, fresh: bool = True):  # type: ignore[no-untyped-def]
    # Where a guard in torch's code shows: the example's call, as the check anchors it.
    anchor = Frame(t.path, 16)
    series = series_of(list(t.calls), variants_first=True)
    upto = len(t.calls)
    grads = runs_with_grad(t.fn, t.calls[0])  # as the check runs it

    def run():  # type: ignore[no-untyped-def]
        return compiled_series(
            t, series, "eager", grads, ws, t.name, anchor, keep=True, fresh=fresh, upto=upto
        )

    return series_check(run, t, ws, HOW, t.name, anchor, grads)


def test_the_series_answers_as_the_check_does(ws: Workspace) -> None:
    torch.manual_seed(0)
    calls = [Call((torch.randn(n, 8), s), {}) for n, s in ((4, 2.0), (6, 3.0), (8, 4.0))]
    t = _target(ws, "Rows", calls)
    t = Target(t.name, t.fn(), t.calls, t.path, t.line, t.kind)
    checked = recompile_lines(t, ws, HOW, t.name, None)
    s, read = _read(t, ws)
    assert s is not None and not read.error
    assert checked.recompiles >= 1, checked  # the rows and the scale changed: torch recompiled
    assert (read.lines, read.compiles, read.recompiles) == (
        checked.lines,
        checked.compiles,
        checked.recompiles,
    )
    # The series went on past the check's calls (the first again, with fresh values): those
    # compiled nothing more, and are not the check's.
    assert len(s.outs) == len(calls) + 2


def test_a_compile_another_version_left_on_a_shared_function_is_not_a_recompile(
    ws: Workspace,
) -> None:
    """``nn.Sequential.forward`` is torch's code: the fix's compile of it stays warm for
    timing while the original's compiles under a backend of its own. Torch then recompiles
    for the other backend (BACKEND_MATCH); a fresh process would not have."""
    torch.manual_seed(0)
    calls = [Call((torch.randn(n, 8),), {}) for n in (4, 6)]
    first = _target(ws, "stack", calls)
    s1, alone = _read(first, ws)
    assert s1 is not None and alone.recompiles >= 1
    other = _target(ws, "stack", calls)
    s2, beside = _read(other, ws, fresh=False)  # first's compile kept warm
    assert s2 is not None
    assert (beside.lines, beside.compiles, beside.recompiles) == (
        alone.lines,
        alone.compiles,
        alone.recompiles,
    )
    torch._dynamo.reset()


def test_a_call_that_raises_is_said_as_the_check_says_it(ws: Workspace) -> None:
    calls = [Call((torch.randn(n, 3),), {}) for n in (4, 6)]
    t = _target(ws, "fails_on_six", calls)
    s, read = _read(t, ws)
    assert s is None
    assert "ValueError: six rows" in read.error, read
    torch._dynamo.reset()
