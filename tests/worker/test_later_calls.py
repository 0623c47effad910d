"""A verified rewrite's compiled calls after the first (the first again, fresh values, the
declared variants) are compared with the original's eager calls over the same series, not the
first call alone: a rewrite equal in eager everywhere and compiled on the example's first call
can still differ compiled on a variant (here, code that reads whether it is being compiled,
on the sizes the variants bring)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import torch
from dynamo_lens.texts.locate import Workspace
from dynamo_lens.worker import modelstate
from dynamo_lens.worker.compiledseries import compiled_series
from dynamo_lens.worker.effects import Effects
from dynamo_lens.worker.latercalls import later_calls_differ
from dynamo_lens.worker.usercode import Call, Target, compiled_from, import_file, uncompiled
from dynamo_lens.worker.verifyruns import numbers_put_back, series_of
from support.fix_workspace import eager_workspace, fix_json
from support.model_workspace import model_workspace

MODEL = """import time
import warnings

import torch


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


class Doubles(torch.nn.Module):
    def forward(self, x):
        return x * 2


class Plain(torch.nn.Module):
    def forward(self, x):
        return x * (3 if torch.compiler.is_compiling() else 2)


class Decorated(torch.nn.Module):
    @torch.compile(backend="eager")
    def forward(self, x):
        return x * (3 if torch.compiler.is_compiling() else 2)


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


class Gap(torch.nn.Module):
    # A timer read from the second call on: the gap differs from run to run, eager or not.
    def __init__(self):
        super().__init__()
        self.prev = None
        self.gap = 0.0

    def forward(self, x):
        now = time.perf_counter()
        if self.prev is not None:
            self.gap = now - self.prev
        self.prev = now
        return x * 2


def warns_when_large(x):
    if x.shape[0] > 4:
        warnings.warn("a large batch")
    return x * 2


def warns_when_large_in_eager(x):
    if x.shape[0] > 4 and not torch.compiler.is_compiling():
        warnings.warn("a large batch")
    return x * 2


def zeroes_its_input_compiled(x):
    y = x * 2
    if torch.compiler.is_compiling() and x.shape[0] > 4:
        x.mul_(0)  # the caller's tensor, on a variant's rows only
    return y


class Warns(torch.nn.Module):
    def forward(self, x):
        if not torch.compiler.is_compiling():
            warnings.warn("runs uncompiled: slow path")
        return x * 2


class CompilesWithin(torch.nn.Module):
    # The user compiles a part themselves: it never warns as they run it, eager or not.
    def __init__(self):
        super().__init__()
        self.part = torch.compile(Warns(), backend="eager")

    def forward(self, x):
        return self.part(x)


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


def test_a_module_compiled_within_is_run_uncompiled_for_the_eager_calls(ws: Workspace) -> None:
    # No unwrapping reaches a ``compile()``d module or a ``@torch.compile`` on ``forward``:
    # their eager calls give x * 2, equal to a plain module's compiled.
    plain, decorated, compiled = _targets(ws, "Doubles", "Decorated", "Plain")
    plain.fn, decorated.fn, compiled.fn = plain.fn(), decorated.fn(), compiled.fn()
    compiled.fn.compile(backend="eager")
    assert compiled.fn(torch.ones(1)).item() == 3.0  # compiled when called as it comes
    for original in (decorated, compiled):
        assert _differences(ws, original, plain) == [], type(original.fn).__name__


def test_a_compile_within_the_original_stays_compiled_in_its_eager_calls(
    ws: Workspace,
) -> None:
    (within,) = _targets(ws, "CompilesWithin")
    within.fn = within.fn()
    assert _differences(ws, within, within) == []


def test_the_state_a_later_compiled_call_leaves_is_compared(ws: Workspace) -> None:
    original, fixed = _targets(ws, "Counts", "CountsApart")
    original.fn, fixed.fn = original.fn(), fixed.fn()
    said = _differences(ws, original, fixed)
    assert said and said[0].startswith("call 2 of 5: state"), said
    # Put back as it was: the timing that follows runs the original from there.
    assert float(original.fn.rows) == 0.0


def test_state_a_timer_sets_from_the_second_call_on_is_not_a_difference(ws: Workspace) -> None:
    # The original's own two eager runs differ there: noise, not the rewrite's doing.
    original, fixed = _targets(ws, "Gap", "Gap")
    original.fn, fixed.fn = original.fn(), fixed.fn()
    assert _differences(ws, original, fixed) == []


def test_a_warning_a_later_compiled_call_drops_is_a_difference(ws: Workspace) -> None:
    original, fixed = _targets(ws, "warns_when_large", "warns_when_large_in_eager")
    said = _differences(ws, original, fixed)
    assert said and said[0].startswith("call 2 of 5: warnings: none where the original"), said


def test_an_input_a_later_compiled_call_changes_in_place_is_a_difference(ws: Workspace) -> None:
    original, fixed = _targets(ws, "original", "zeroes_its_input_compiled")
    said = _differences(ws, original, fixed)
    assert said and said[0].startswith("call 2 of 5: input after the call"), said


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


# A second review's cases: one noisy record (a printed wall clock, a timestamp kept in a list)
# hid the one beside it that the rewrite changed on the second call. Only what differs between
# two eager runs of the original is forgiven now, record by record, leaf by leaf.
CLOCKED = """import time

import torch
from torch import nn


class Clocked(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.last = None

    def forward(self, x):
        y = self.fc(x)
        if self.last is None:
            print("warm-up call")
        else:
            print("steady call")
        print("wall clock", time.perf_counter())
        self.last = time.time()
        return y


def compile_example():
    torch.manual_seed(0)
    return Clocked().eval(), (torch.randn(2, 4),)
"""

JOURNAL = """import time

import torch
from torch import nn


class Journal(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.last = None
        self.events = []

    def forward(self, x):
        y = self.fc(x)
        kind = "warm-up" if self.last is None else "steady"
        self.events.append((kind, time.perf_counter()))
        self.last = time.time()
        return y


def compile_example():
    torch.manual_seed(0)
    return Journal().eval(), (torch.randn(2, 4),)
"""


# (Plain ``str``: torch 2.15 fails tracing a format spec on a timer's float after its break.)
# A third review's: the noise sat in the same record or leaf as the difference (a label and a
# timestamp in one printed line, one warning, one string kept; a dict keyed by timestamps; a
# timestamp written into the caller's tensor beside a real in-place change, or skipped).
def _journal(kept: str, keep: str, stamp: str = "time.perf_counter()") -> str:
    return f"""import time
import warnings

import torch
from torch import nn


class Journal(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.last = None
        self.events = {kept}

    def forward(self, x, out):
        y = self.fc(x)
        kind = "warm-up" if self.last is None else "steady"
        now = {stamp}
        {keep}
        self.last = time.time()
        return y


def compile_example():
    torch.manual_seed(0)
    return Journal().eval(), (torch.randn(2, 4), torch.ones(2, 4))
"""


MIXED = {
    "printed": _journal("[]", 'print(kind, "call at", now)'),
    "warned": _journal(
        "[]",
        "warnings.warn(kind + ' at ' + str(now), "
        "RuntimeWarning if kind == 'warm-up' else UserWarning)",
    ),
    "kept": _journal("[]", 'self.events.append(kind + " at " + str(now))'),
    "keyed": _journal("{}", "self.events[str(now)] = kind"),
    "written": _journal(
        "[]", "out[0, 0] = now % 1.0\n        out[1] *= 0.0 if kind == 'steady' else 1.0"
    ),
}


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("clocked", CLOCKED, "call 2 of 3: printed lines"),
        ("journal", JOURNAL, "call 2 of 3: state :events[1][0]"),
        ("printed", MIXED["printed"], "call 2 of 3: printed lines"),
        ("warned", MIXED["warned"], "call 2 of 3: warnings"),
        ("kept", MIXED["kept"], "call 2 of 3: state :events[1]"),
        ("keyed", MIXED["keyed"], "call 2 of 3: state :events"),
        ("written", MIXED["written"], "call 2 of 3: input after the call [1]"),
    ],
)
def test_a_noisy_record_does_not_hide_the_one_beside_it(
    tmp_path: Path, name: str, text: str, said: str
) -> None:
    ws = eager_workspace(tmp_path, **{name: text})
    doc = fix_json(ws, f"{name}.py")
    fixes = [f for f in doc["fixes"] if f["rule"] == "guard-host"]  # type: ignore[union-attr]
    assert fixes, doc
    details = []
    for fix in fixes:
        failed = [c for c in fix["checks"] if not c["ok"]]
        assert not fix["verified"] and failed[0]["name"] == "compiled equal", fix
        details.append(failed[0]["detail"])
    assert any(d.startswith(said) for d in details), details


def test_a_user_s_wrapper_around_a_compiled_forward_is_kept() -> None:
    # ``functools.wraps`` copies torch's attribute onto the user's wrapper; it is not torch's.
    def counted(f):  # type: ignore[no-untyped-def]
        @functools.wraps(f)
        def w(self, x):  # type: ignore[no-untyped-def]
            self.calls += 1
            return f(self, x)

        return w

    class M(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        @counted
        @torch.compile(backend="eager")
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2

    m = M()
    assert compiled_from(M.forward) is None
    assert compiled_from(M.forward.__wrapped__) is not None  # torch's own wrapper
    uncompiled(m)(torch.ones(1))
    assert m.calls == 1


def test_only_the_records_two_runs_of_the_original_differ_in_are_forgiven() -> None:
    one, two = Effects(printed="steady\nclock 1\n"), Effects(printed="steady\nclock 2\n")
    noisy = one.unstable(two)
    assert noisy == {"printed lines": {1: True}}  # only a number differs there
    assert Effects(printed="steady\nclock 9\n").differences(one, "call 2", noisy) == []
    assert Effects(printed="warm-up\nclock 9\n").differences(one, "call 2", noisy)
    assert Effects(printed="steady\n").differences(one, "call 2", noisy)
    # The words beside the number are compared (a label and a timing in one line).
    assert Effects(printed="steady\nclick 9\n").differences(one, "call 2", noisy)
    # Where more than numbers differ between the original's runs, the record is not compared.
    words = one.unstable(Effects(printed="steady\ntock\n"))
    assert words == {"printed lines": {1: False}}
    assert Effects(printed="steady\nanything\n").differences(one, "call 2", words) == []
    # Runs that print different numbers of lines: how many is all that can be compared.
    counts = one.unstable(Effects(printed="steady\n"))
    assert counts == {"printed lines": None}
    assert Effects(printed="a\nb\n").differences(one, "call 2", counts) == []
