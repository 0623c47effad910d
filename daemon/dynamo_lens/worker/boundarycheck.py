"""What verification allows and asks of a rewrite that moves the compile boundary (a loop runs in
Python, the step it calls is compiled; fixes/boundary.py).

Torch reports keeping a function out of the graph as a break of its own (GB0099, "Skip inlining
`torch.compiler.disable()`d function"): for the function the rewrite disabled, that break is the
new boundary, not a break the rewrite added. Any other break still counts.

The original's loop frame, skipped whole, never recompiled: what counts instead is that no frame
of the compiled steps compiles again step after step. Where the rewrite compiles a model that a
library's ``generate()`` calls each step, the first call's steps run at new sizes each time (the
cache grows), so torch compiles a few times before its automatic dynamic shapes settle; a call
whose prompt is one token longer then runs every step at sizes not seen before. If the steps
recompiled, that call would compile once per step; it may compile once (the prompt's own step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from ..findings import Finding
from ..fixes.rewrite import Rewrite
from .compiledseries import Series
from .equivalence import compare
from .usercode import Call, Target
from .verifyruns import run_eager


def at_boundary(findings: list[Finding], rewrite: Rewrite) -> list[Finding]:
    """The breaks torch reports for skipping the function ``rewrite`` keeps out of the graph."""
    if not rewrite.boundary:
        return []
    named = f"<function {rewrite.boundary} at "  # torch's words: "<function Gen.forward at 0x.."
    return [
        f
        for f in findings
        if "disable" in str(f.data.get("gb_type", "")).lower()
        and named in f"{f.message} {f.explanation}"
    ]


def longer_prompt(call: Call) -> Call | None:
    """``call`` with its token ids one longer: the first integer tensor of two or more
    dimensions (a batch of sequences; in a container too: ``**batch``), and any other integer
    tensor of its shape (its attention mask), their last position repeated. Other integer
    tensors (lengths) are left as they are. None where there is no such tensor."""
    leaves, spec = tree_flatten((call.args, call.kwargs))

    def integer(v: Any) -> bool:
        return isinstance(v, torch.Tensor) and not (
            v.is_floating_point() or v.is_complex() or v.dtype is torch.bool
        )

    ids = next((v for v in leaves if integer(v) and v.dim() >= 2 and v.shape[-1] > 0), None)
    if ids is None:
        return None
    leaves = [
        torch.cat([v, v[..., -1:]], dim=-1) if integer(v) and v.shape == ids.shape else v
        for v in leaves
    ]
    args, kwargs = tree_unflatten(leaves, spec)
    return Call(tuple(args), dict(kwargs))


def steps_settle(
    series: Series,
    first: Call,
    rewrite: Rewrite,
    compiled: Callable[[Call], Series],
    original: Target,
    state: dict[str, Any],
    require_compiled: bool = True,
) -> tuple[bool, str]:
    """Whether no frame compiles again step after step, and what was measured. ``series`` is
    the rewrite's compiled series (the example's first call, then again); ``compiled`` compiles
    afresh, runs ``first`` and then the call it is given, and returns that series, whose
    outputs on the longer prompt must equal the ``original``'s in eager from ``state``."""
    most, again_n = series.most[0], series.per_call[1]
    said = (
        f"the first call compiled one frame {most} time(s); the same call again compiled "
        f"{again_n} frame(s)"
    )
    if (rewrite.boundary and series.per_call[0] < 2) or (require_compiled and not series.graphs):
        # The target's own frame, which breaks at once at the boundary, and nothing else; or
        # no frame whose graph holds an op (the steps torch skips: an RNN module's).
        return False, f"{said}: nothing the steps call was compiled"
    if again_n or most <= 2:
        # Within the first call, a frame compiles at most twice (once more for what the first
        # step made: an output that requires grad); the same call again compiles nothing.
        return not again_n and most <= 2, said
    if not rewrite.boundary:
        return False, said
    longer = longer_prompt(first)
    if longer is None:
        return False, (
            f"{said}; no prompt one token longer could be made (no integer tensor of two "
            "dimensions among the example's inputs) to show the steps do not compile again"
        )
    how = "a prompt one token longer"
    want = run_eager(original, longer, how, False, state, may_raise=True)
    if want.raised:
        return False, f"{said}; the original raises on {how} ({want.raised}): no such input"
    s = compiled(longer)
    n = s.most[1]
    said += f"; {how} compiled no frame more than {n} time(s)"
    diffs = compare(s.outs[1][0], want.out, rtol=None, atol=None, grad=False, label="output")
    if diffs:
        return False, f"{how}: {diffs[0].where}: {diffs[0].detail}"
    return n <= 1, f"{said}, its outputs equal"
