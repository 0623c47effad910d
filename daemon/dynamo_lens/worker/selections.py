"""Whether a rewrite's ``torch.where`` selects between arms of one shape and dtype, as the
original's branch chose between them. ``torch.where`` broadcasts and promotes: an arm of another
shape (``h.mean(dim=0)`` against ``h``) or dtype would change the output's, and a condition of
more than one element, which the original's ``if`` refuses, would select element by element.

Two checks, on the rewritten lines only:
- :func:`symbolic`: the rewrite traced by Dynamo with dynamic shapes; each selection's arms, as
  fake tensors whose sizes are symbols, must have the same shape expressions and dtype: equal for
  every input size, not just the example's;
- :func:`checked`: while open, every ``torch.where`` the rewritten lines call is checked on the
  real tensors (the example and the inputs that take each path).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch

from .usercode import Call

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _sizes(t: torch.Tensor) -> list[Any]:
    return list(t.shape)


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
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if shape(a) != shape(b):
            return f"the arms differ in shape: {shape(a)} vs {shape(b)}"
        if a.dtype != b.dtype:
            return f"the arms differ in dtype: {a.dtype} vs {b.dtype}"
    return None


def _in(filename: str, lineno: int, path: str, lines: range) -> bool:
    return lineno in lines and os.path.realpath(filename) == path


@contextlib.contextmanager
def checked(path: str, lines: range) -> Iterator[list[str]]:
    """While open, each ``torch.where(c, a, b)`` called from ``lines`` of ``path`` is checked;
    what failed is added to the list yielded."""
    problems: list[str] = []
    real = torch.where
    path = os.path.realpath(path)

    def where(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 3 and not kwargs:
            caller = sys._getframe(1)
            if _in(caller.f_code.co_filename, caller.f_lineno, path, lines):
                problem = _mismatch(args[0], args[1], args[2])
                if problem and len(problems) < 5:
                    problems.append(f"line {caller.f_lineno}: {problem}")
        return real(*args, **kwargs)

    torch.where = where
    try:
        yield problems
    finally:
        torch.where = real


def _symbols(t: torch.Tensor) -> list[str]:
    return [str(s) for s in t.shape]


def symbolic(fn: Any, call: Call, path: str, lines: range) -> list[str]:
    """The selections on ``lines`` of ``path`` as Dynamo traces ``fn`` with dynamic shapes:
    what makes one differ from its branch for some input size. Nothing traced (the rewrite
    still breaks there) is nothing found: the real-tensor check still runs."""
    path = os.path.realpath(path)
    problems: list[str] = []

    def backend(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        for node in gm.graph.nodes:
            if node.op != "call_function" or node.target is not torch.where or len(node.args) != 3:
                continue
            frames = _FRAME.findall(str(node.meta.get("stack_trace") or ""))
            if not frames or not _in(frames[-1][0], int(frames[-1][1]), path, lines):
                continue
            vals = [
                a.meta.get("example_value") if isinstance(a, torch.fx.Node) else a
                for a in node.args
            ]
            problem = _mismatch(vals[0], vals[1], vals[2], shape=_symbols)
            if problem:
                problems.append(f"line {frames[-1][1]}: {problem} (for some input sizes)")
        return gm.forward

    torch._dynamo.reset()
    try:
        torch.compile(fn, backend=backend, dynamic=True)(*call.args, **call.kwargs)
    finally:
        torch._dynamo.reset()
    return problems
