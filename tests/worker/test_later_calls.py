"""A verified rewrite's compiled calls after the first (the first again, fresh values, the
declared variants) are compared with the original's eager calls over the same series, not the
first call alone: a rewrite equal in eager everywhere and compiled on the example's first call
can still differ compiled on a variant (here, code that reads whether it is being compiled,
on the sizes the variants bring)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from dynamo_lens.texts.locate import Workspace
from dynamo_lens.worker import modelstate
from dynamo_lens.worker.compiledseries import compiled_series, later_calls_differ
from dynamo_lens.worker.usercode import Call, Target, import_file
from dynamo_lens.worker.verifyruns import numbers_put_back, series_of
from support.fix_workspace import eager_workspace, fix_json
from support.model_workspace import model_workspace

MODEL = """import torch


def original(x):
    return x * 2


def compiled_apart(x):
    if torch.compiler.is_compiling() and x.shape[0] > 4:
        return x * 3  # compiled on a variant's rows only
    return x * 2


@torch.compile(backend="eager")
def decorated(x):
    if torch.compiler.is_compiling():
        return x * 3  # what its compiled calls give, never its eager ones
    return x * 2


class Counts(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("rows", torch.zeros(()))

    def forward(self, x):
        self.rows += x.shape[0]
        return x * 2


class CountsApart(Counts):
    def forward(self, x):
        # The same outputs; compiled on a variant's rows, it counts a hundred times over.
        many = torch.compiler.is_compiling() and x.shape[0] > 4
        self.rows += x.shape[0] * (100 if many else 1)
        return x * 2


def raises_on_eight(x):
    if x.shape[0] == 8:
        raise ValueError("eight rows")
    return x * 2
"""


@pytest.fixture()
def ws(tmp_path: Path) -> Workspace:
    return model_workspace(tmp_path, MODEL)


def _targets(ws: Workspace, *names: str) -> list[Target]:
    torch.manual_seed(0)
    calls = [Call((torch.randn(n, 3),), {}) for n in (4, 6, 8)]
    m = import_file(ws.root / "model.py", ws)
    path = str(ws.root / "model.py")
    return [Target("compile_example", getattr(m, n), calls, path, 1, "example") for n in names]


def _differences(ws: Workspace, original: Target, fixed: Target) -> list[str]:
    series = series_of(list(fixed.calls), variants_first=True)
    s = compiled_series(fixed, series, "eager", False, ws, "t", None)
    state = modelstate.save(original.fn)
    return later_calls_differ(s, original, series, False, state, len(series))


def test_a_rewrite_compiled_apart_on_a_variant_differs_there(ws: Workspace) -> None:
    original, fixed = _targets(ws, "original", "compiled_apart")
    for c in original.calls:  # equal in eager on every call
        assert torch.equal(original.fn(*c.args), fixed.fn(*c.args))
    said = _differences(ws, original, fixed)
    # Calls 2 and 3 of the series are the variants of 6 and 8 rows; call 1 (4 rows) is equal.
    assert said and all(s.startswith(("call 2 of 5", "call 3 of 5")) for s in said), said
    assert any(s.startswith("call 2 of 5: output") for s in said), said


def test_the_same_function_compiled_is_equal_on_every_call(ws: Workspace) -> None:
    (original,) = _targets(ws, "original")
    assert _differences(ws, original, original) == []


def test_an_original_that_raises_where_the_compiled_rewrite_ran_is_a_difference(
    ws: Workspace,
) -> None:
    original, fixed = _targets(ws, "raises_on_eight", "original")
    said = _differences(ws, original, fixed)
    assert said == ["the original raises ValueError in eager where the compiled rewrite ran"]


def test_an_original_that_comes_compiled_is_run_uncompiled_for_the_eager_calls(
    ws: Workspace,
) -> None:
    # ``decorated`` is ``@torch.compile``d: its eager calls are its own function's (x * 2),
    # equal to the plain function compiled; its compiled wrapper called would give x * 3.
    decorated, plain = _targets(ws, "decorated", "original")
    assert _differences(ws, decorated, plain) == []


def test_the_state_a_later_compiled_call_leaves_is_compared(ws: Workspace) -> None:
    original, fixed = _targets(ws, "Counts", "CountsApart")
    original.fn, fixed.fn = original.fn(), fixed.fn()
    said = _differences(ws, original, fixed)
    assert said and said[0].startswith("call 2 of 5: state"), said
    # Put back as it was: the timing that follows runs the original from there.
    assert float(original.fn.rows) == 0.0


def test_a_number_passed_as_a_0d_tensor_is_put_back_for_the_original() -> None:
    t = torch.tensor(0.25)
    mine = Call((torch.ones(2), t), {"k": torch.tensor(3)})
    back = numbers_put_back(mine, Call((torch.zeros(2), 1.5), {"k": 2}))
    assert back is not None
    assert back.args[0] is mine.args[0] and back.args[1] == 0.25 and back.kwargs == {"k": 3}
    assert type(back.args[1]) is float and type(back.kwargs["k"]) is int
    assert numbers_put_back(mine, Call((torch.zeros(2),), {"k": 2})) is None  # another form


# A hostile review's case: the timestamp runs in eager only after guard-host's rewrite, so
# compiled calls never set it, and every compiled call doubles what only the first should.
STAMPED = """import time

import torch
from torch import nn


class Stamped(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.started = None

    def forward(self, x):
        y = self.lin(x)
        if self.started is None:
            y = y * 2
        self.started = time.time()
        return y


def compile_example():
    torch.manual_seed(0)
    return Stamped().eval(), (torch.randn(2, 4),)
"""


def test_a_skipped_statement_that_a_later_call_reads_is_refused(tmp_path: Path) -> None:
    ws = eager_workspace(tmp_path, stamp=STAMPED)
    doc = fix_json(ws, "stamp.py")
    (fix,) = [f for f in doc["fixes"] if f["rule"] == "guard-host"]  # type: ignore[union-attr]
    failed = [c for c in fix["checks"] if not c["ok"]]
    assert not fix["verified"] and failed[0]["name"] == "compiled equal", fix
    assert failed[0]["detail"].startswith("call 2 of 3: output"), fix
    assert (ws / "stamp.py").read_text() == STAMPED
