"""A fresh value for an input that made torch recompile: the next step of the change the
example's calls made (a size 4 then 6 gives 8; ``n`` 2 then 3 gives 4), so one more call tells
whether torch recompiles for every new value or absorbed the change (automatic dynamic
shapes, a second cached graph)."""

from __future__ import annotations

from typing import Any

import torch

from .usercode import Call


def _fresh_tensor(before: torch.Tensor, after: torch.Tensor) -> torch.Tensor:
    if before.dim() == after.dim() and before.shape != after.shape:
        shape = [
            b + (b - a) if b != a and b + (b - a) > 0 else b
            for a, b in zip(before.shape, after.shape, strict=True)
        ]
    else:
        shape = list(after.shape)
    if after.dtype == torch.bool:
        out = torch.rand(shape, device=after.device) > 0.5
    elif after.is_floating_point() or after.is_complex():
        out = torch.randn(shape, dtype=after.dtype, device=after.device)
    else:
        hi = int(after.max().item()) + 1 if after.numel() else 2
        lo = int(after.min().item()) if after.numel() else 0
        out = torch.randint(lo, max(hi, lo + 1), shape, dtype=after.dtype, device=after.device)
    return out.requires_grad_(after.requires_grad) if out.is_floating_point() else out


def _fresh(before: Any, after: Any) -> Any:
    if isinstance(after, torch.Tensor):
        ref = before if isinstance(before, torch.Tensor) and before.dtype == after.dtype else after
        return _fresh_tensor(ref, after)
    if isinstance(after, bool) or type(after) is not type(before):
        return after  # None to a value, a flag: the value itself is what changed, once
    if isinstance(after, int) and after != before:
        return after + (after - before)
    if isinstance(after, float) and after != before:
        return after + (after - before)
    return after


def next_call(before: Call, after: Call) -> Call:
    """``after`` with each input that changed from ``before`` changed once more."""
    args = tuple(
        _fresh(before.args[i] if i < len(before.args) else None, v)
        for i, v in enumerate(after.args)
    )
    kwargs = {k: _fresh(before.kwargs.get(k), v) for k, v in after.kwargs.items()}
    return Call(args, kwargs)
