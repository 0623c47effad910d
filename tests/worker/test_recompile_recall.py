"""A recompile fix's verification stands on the check's own run of the original only where that
run started from what the original is now; and a recompile check whose calls broke nowhere
stands for the trace of the first call."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from dynamo_lens.texts.locate import Workspace
from dynamo_lens.worker import lastcheck, recompiles, verifyrecompiles
from dynamo_lens.worker.usercode import Call, Target, import_file, purge_workspace_modules
from support.model_workspace import model_workspace

MODEL = """import torch
from torch import nn


class Counted(nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = 0
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x, n):
        self.steps += 1
        return x * self.scale * n


def broken(x):
    y = x + 1
    print("here")
    return y * 2
"""
HOW = (None, 8, 4)


@pytest.fixture()
def ws(tmp_path: Path) -> Workspace:
    return model_workspace(tmp_path, MODEL)


def _target(ws: Workspace, ns: tuple[int, ...] = (2, 3)) -> Target:
    m = import_file(ws.root / "model.py", ws)
    calls = [Call((torch.ones(2, 3), n), {}) for n in ns]
    return Target("compile_example", m.Counted(), calls, str(ws.root / "model.py"), 5, "example")


def _checked(ws: Workspace, t: Target) -> recompiles.RecompileResult:
    context = lastcheck.recompile_context(t, HOW, ws)
    res = recompiles.find_recompiles(
        t, ws, name=t.name, dynamic=None, limit=8, probes=4, compiled_frames=[t.path]
    )
    lastcheck.remember_recompiles(t.path, t, ws, context, res)
    return res


def test_the_check_is_recalled_for_the_original_it_ran_on(ws: Workspace) -> None:
    res = _checked(ws, _target(ws))
    assert res.recompiles >= 1  # the number varied: torch compiled again
    # A fresh import of the same file, the same calls: the same run.
    purge_workspace_modules(ws)
    assert lastcheck.recall_recompiles(str(ws.root / "model.py"), _target(ws), ws, HOW) is res


def test_what_the_target_holds_its_calls_and_the_settings_decide(ws: Workspace) -> None:
    t = _target(ws)
    _checked(ws, t)
    path = str(ws.root / "model.py")
    # The check's calls moved the counter: a target that starts elsewhere is checked again.
    assert lastcheck.recall_recompiles(path, t, ws, HOW) is None
    fresh = _target(ws)
    assert lastcheck.recall_recompiles(path, fresh, ws, HOW) is not None
    assert lastcheck.recall_recompiles(path, _target(ws, (2, 4)), ws, HOW) is None  # a value
    assert lastcheck.recall_recompiles(path, fresh, ws, (True, 8, 4)) is None  # dynamic=True
    marked = _target(ws)
    torch._dynamo.mark_dynamic(marked.calls[0].args[0], 0)
    assert lastcheck.recall_recompiles(path, marked, ws, HOW) is None
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        assert lastcheck.recall_recompiles(path, fresh, ws, HOW) is None
    (ws.root / "model.py").write_text(MODEL.replace("* n", "* n * 1"))
    assert lastcheck.recall_recompiles(path, fresh, ws, HOW) is None


def test_a_check_that_broke_or_skipped_does_not_stand_for_the_trace(ws: Workspace) -> None:
    m = import_file(ws.root / "model.py", ws)
    calls = [Call((torch.ones(2),), {}), Call((torch.ones(3),), {})]
    path = str(ws.root / "model.py")
    t = Target("broken", m.broken, calls, path, 16, "example")
    how = verifyrecompiles.RecompileCheck(None, 8, 4)
    assert not verifyrecompiles.recompile_lines(t, ws, how, "broken", None).unbroken
    whole = Target("whole", m.Counted(), _target(ws).calls, path, 5, "example")
    assert verifyrecompiles.recompile_lines(whole, ws, how, "whole", None).unbroken


def test_a_check_that_broke_is_never_recalled(ws: Workspace) -> None:
    """After a break a tensor's value can choose what torch compiles, and the context holds
    no values: such a check runs again."""
    m = import_file(ws.root / "model.py", ws)
    path = str(ws.root / "model.py")
    calls = [Call((torch.ones(2),), {}), Call((torch.ones(3),), {})]
    t = Target("broken", m.broken, calls, path, 16, "example")
    res = _checked(ws, t)
    assert not res.unbroken
    assert lastcheck.recall_recompiles(path, t, ws, HOW) is None


def test_a_module_global_a_call_reads_is_part_of_what_it_started_from(ws: Workspace) -> None:
    (ws.root / "model.py").write_text(MODEL + "\nLIMIT = 3\n")
    purge_workspace_modules(ws)
    sys.modules.pop("model", None)
    t = _target(ws)
    context = lastcheck.recompile_context(t, HOW, ws)
    sys.modules[type(t.fn).__module__].LIMIT = 4  # a call moved it
    assert lastcheck.recompile_context(t, HOW, ws) != context
