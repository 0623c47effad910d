"""Whether a rewrite's selections choose between arms of one shape and dtype, as the original's
branch chose between them. ``torch.where`` broadcasts and promotes: an arm of another shape
(``h.mean(dim=0)`` against ``h``) or dtype would change the output's, and a condition of more
than one element, which the original's ``if`` refuses, would select element by element.

The rules write their own selections as ``__dynamo_lens_where__`` in ``Rewrite.checked`` (a
``torch.where`` of the user's inside an arm is not theirs to check). That text runs twice:
- :func:`symbolic`: traced by Dynamo with dynamic shapes; each selection's arms, as fake tensors
  whose sizes are symbols, must have the same shape expressions and dtype: equal for every
  input size, not just the example's;
- under :func:`checking`: in eager, on every input compared, each selection is checked on the
  real tensors.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import re
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from ..fixes.rewrite import SELECT_CHECKED, Rewrite
from ..texts.locate import Workspace
from . import modelstate
from .shadow import import_shadowed, shadowed
from .usercode import Call, Target
from .verifyruns import Run, clone, run_eager

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\w+)')


def _sizes(t: torch.Tensor) -> list[Any]:
    return list(t.shape)


def _symbols(t: torch.Tensor) -> list[str]:
    return [str(s) for s in t.shape]


def _mismatch(
    cond: Any, a: Any, b: Any, shape: Callable[[torch.Tensor], list[Any]] = _sizes
) -> str | None:
    """What makes ``torch.where(cond, a, b)`` differ from choosing ``a`` or ``b`` whole."""
    if isinstance(cond, torch.Tensor):
        if not all(str(s) == "1" for s in cond.shape):
            return (
                f"the condition has shape {shape(cond)}, not one value (the original's if "
                "refuses it)"
            )
        arms = [t for t in (a, b) if isinstance(t, torch.Tensor)]
        if arms and cond.dim() > min(t.dim() for t in arms):
            return f"the condition's shape {shape(cond)} widens the arms'"
    for arm in (a, b):
        if not isinstance(arm, torch.Tensor):
            # The original kept a Python value (``t = temp``): torch.where makes it a tensor,
            # of its own dtype (a float32 0.3 is not the float 0.3).
            return f"an arm is a Python {type(arm).__name__} ({arm!r:.40}), not a tensor"
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if shape(a) != shape(b):
            return f"the arms differ in shape: {shape(a)} vs {shape(b)}"
        if a.dtype != b.dtype:
            return f"the arms differ in dtype: {a.dtype} vs {b.dtype}"
    return None


def _select(cond: Any, a: Any, b: Any) -> Any:
    """A rule's selection while Dynamo traces: ``torch.where``, from a frame of its own."""
    return torch.where(cond, a, b)


@contextlib.contextmanager
def _bound(fn: Callable[..., Any]) -> Iterator[None]:
    setattr(builtins, SELECT_CHECKED, fn)
    try:
        yield
    finally:
        with contextlib.suppress(AttributeError):
            delattr(builtins, SELECT_CHECKED)


@contextlib.contextmanager
def checking() -> Iterator[list[str]]:
    """While open, the checked text's selections are checked as they run; what failed is
    added to the list yielded."""
    problems: list[str] = []

    def select(cond: Any, a: Any, b: Any) -> Any:
        problem = _mismatch(cond, a, b)
        if problem and problem not in problems and len(problems) < 5:
            problems.append(problem)
        return torch.where(cond, a, b)

    with _bound(select):
        yield problems


def symbolic(fn: Any, call: Call) -> list[str]:
    """The checked text's selections as Dynamo traces ``fn`` with dynamic shapes: what makes
    one differ from its branch for some input size. Nothing traced (the rewrite still breaks
    there) is nothing found: the real-tensor check still runs."""
    problems: list[str] = []

    def backend(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        for node in gm.graph.nodes:
            if node.op != "call_function" or node.target is not torch.where or len(node.args) != 3:
                continue
            frames = _FRAME.findall(str(node.meta.get("stack_trace") or ""))
            if not frames or frames[-1][2] != _select.__name__:
                continue  # a torch.where of the user's, inside an arm
            vals = [
                a.meta.get("example_value") if isinstance(a, torch.fx.Node) else a
                for a in node.args
            ]
            problem = _mismatch(vals[0], vals[1], vals[2], shape=_symbols)
            if problem:
                problems.append(f"{problem} (for some input sizes)")
        return gm.forward

    torch._dynamo.reset()
    try:
        with _bound(_select):
            torch.compile(fn, backend=backend, dynamic=True)(*call.args, **call.kwargs)
    finally:
        torch._dynamo.reset()
    return problems


def arms(
    path: Path,
    edited: Path,
    source: str,
    rewrite: Rewrite,
    pick: Callable[[types.ModuleType], Target],
    ws: Workspace,
    runs: list[Run],
    grads: bool,
) -> list[str]:
    """What makes one of ``rewrite``'s own selections differ from the branch it replaced: its
    checked text imported from a shadow, traced symbolically on the first input, then run in
    eager on each of ``runs``' inputs the original accepts (the example's and those that take
    each path)."""
    if not rewrite.checked:
        return []
    text = dataclasses.replace(rewrite, text=rewrite.checked).apply(source)
    with shadowed(edited, text, ws):
        t = pick(import_shadowed(path, edited, ws))
        first = runs[0]
        modelstate.load(t.fn, first.start or {})
        try:
            problems = symbolic(t.fn, clone(first.call))
        except Exception:  # Dynamo cannot trace it with dynamic shapes: no finding about it
            problems = []
        with checking() as seen:
            # Not where the original raises (an input it refuses: the comparison of outputs
            # then asks the rewrite to raise too), nor on another size, dtype or mode, whose
            # outputs are compared whole (a mask of one element against a cached one of four
            # broadcasts to the same sum).
            for r in runs:
                if not r.raised and r.compiled:
                    run_eager(t, r.call, r.how, grads, r.start or {}, may_raise=True, seed=r.seed)
    return problems + [p for p in seen if p not in problems]
