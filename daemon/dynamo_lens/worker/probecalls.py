"""How the recompile check makes its calls: in the grad mode the target runs in for real, each
from a fixed seed, and, where the example declares no variants, its probes: the example's call
with one dimension of one tensor, or one Python number, changed a step at a time (recompiles.py
runs each family from a fresh Dynamo)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from .usercode import Call


def _perturb_tensor(t: torch.Tensor, dim: int, k: int) -> torch.Tensor:
    shape = list(t.shape)
    shape[dim] += k
    if t.dtype == torch.bool:
        return torch.rand(shape, device=t.device) > 0.5
    if t.is_floating_point() or t.is_complex():
        return torch.randn(shape, dtype=t.dtype, device=t.device)
    hi = int(t.max().item()) + 1 if t.numel() else 2
    lo = int(t.min().item()) if t.numel() else 0
    return torch.randint(lo, max(hi, lo + 1), shape, dtype=t.dtype, device=t.device)


def probe_families(call: Call, n: int, max_families: int = 6) -> list[list[Call]]:
    """Without declared variants: vary one dim or one Python number at a time."""
    families: list[list[Call]] = []
    slots: list[tuple[str | int, Any]] = [(i, a) for i, a in enumerate(call.args)]
    slots += list(call.kwargs.items())

    def with_value(slot: str | int, value: Any) -> Call:
        args, kwargs = list(call.args), dict(call.kwargs)
        if isinstance(slot, int):
            args[slot] = value
        else:
            kwargs[slot] = value
        return Call(tuple(args), kwargs)

    for slot, value in slots:
        if isinstance(value, torch.Tensor) and value.dim() >= 1:
            for d in range(value.dim()):
                families.append(
                    [
                        call,
                        *(with_value(slot, _perturb_tensor(value, d, k)) for k in range(1, n + 1)),
                    ]
                )
        elif isinstance(value, int) and not isinstance(value, bool):
            families.append([call, *(with_value(slot, value + k) for k in range(1, n + 1))])
        elif isinstance(value, float):
            families.append(
                [call, *(with_value(slot, value * (1 + 0.5 * k)) for k in range(1, n + 1))]
            )
    return families[:max_families]


def runs_with_grad(fn: Any, call: Call) -> bool:
    """How the target runs for real, as eager would: a module in training mode (the example
    decides, with ``.eval()``), or any target given tensors that require grad (an ``eval()``
    model asked for its input's gradient: a saliency map), builds the autograd graph, and
    Dynamo guards on that (checkpointing, requires_grad)."""
    values = tree_flatten((call.args, call.kwargs))[0]
    if any(isinstance(v, torch.Tensor) and v.requires_grad for v in values):
        return True
    if isinstance(fn, torch.nn.Module):
        return _trains(fn)
    # A function that calls a model in training mode (``def step(x): return model(x)``, the
    # model a global or a closed-over name) runs with gradients as the model does (hostile
    # review: checked without them, a mark that raises with them was written).
    code, names = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    used = [names.get(n) for n in code.co_names] if code is not None else []
    used += [_contents(c) for c in getattr(fn, "__closure__", None) or ()]
    return any(isinstance(m, torch.nn.Module) and _trains(m) for m in used)


def _trains(m: torch.nn.Module) -> bool:
    return m.training and any(p.requires_grad for p in m.parameters())


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # a name the function binds later
        return None


@contextlib.contextmanager
def as_it_runs(grad: bool) -> Iterator[None]:
    # The equivalence check's discipline: a fixed seed per call, the caller's RNG untouched.
    with torch.random.fork_rng(devices=[]), torch.set_grad_enabled(grad):
        torch.manual_seed(0)
        yield


def valid_in_eager(fn: Any, call: Call, grad: bool) -> bool:
    try:
        with as_it_runs(grad):
            fn(*call.args, **call.kwargs)
        return True
    except Exception:
        return False
