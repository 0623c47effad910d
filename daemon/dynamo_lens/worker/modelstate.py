"""What a target computes with that keeps state between calls, saved and put back: the
parameters and buffers of its modules (``state_dict``), their plain Python attributes (a step
counter), and a training step's optimizers. Two runs that must be compared (eager and compiled,
an original and its rewrite) start from the same state."""

from __future__ import annotations

import copy
import inspect
from typing import Any

import torch


def _stateful(fn: Any) -> dict[str, Any]:
    """What a target computes with that keeps state between calls, by name: the module itself,
    or, for a function (a training step), the modules and optimizers of its module's globals.
    The rewrite's shadow builds its own at import, from wherever the RNG then stood."""
    fn = inspect.unwrap(fn)
    owner = getattr(fn, "__self__", None)
    if isinstance(fn, torch.nn.Module) or isinstance(owner, torch.nn.Module):
        return {"": fn if isinstance(fn, torch.nn.Module) else owner}
    names = getattr(fn, "__globals__", {})
    kinds = (torch.nn.Module, torch.optim.Optimizer)
    return {k: v for k, v in names.items() if isinstance(v, kinds)}


_PLAIN = (int, float, bool, str, type(None))


def _attributes(m: torch.nn.Module) -> dict[str, dict[str, Any]]:
    """Each submodule's plain Python attributes (a step counter, a cached length): state a
    forward may change that ``state_dict`` does not hold."""
    return {
        name: {k: v for k, v in sub.__dict__.items() if type(v) in _PLAIN}
        for name, sub in m.named_modules()
    }


def save(fn: Any, *, parameters: bool = True) -> dict[str, Any]:
    """``fn``'s state; without ``parameters``, a module's buffers and attributes only (a
    forward changes those; a copy of a large model's weights would double its memory)."""
    out: dict[str, Any] = {}
    for k, v in _stateful(fn).items():
        sd = v.state_dict()
        if not parameters and isinstance(v, torch.nn.Module):
            weights = {n for n, _ in v.named_parameters()}
            sd = {n: t for n, t in sd.items() if n not in weights}
        out[k] = copy.deepcopy(sd)
        if isinstance(v, torch.nn.Module):
            out[f"{k}\0attributes"] = _attributes(v)
    return out


def load(fn: Any, state: dict[str, Any]) -> None:
    for k, v in _stateful(fn).items():
        if isinstance(v, torch.optim.Optimizer) and k in state:
            # An optimizer's load keeps the saved tensors (its step then changes them in place).
            v.load_state_dict(copy.deepcopy(state[k]))
        elif isinstance(v, torch.nn.Module):
            if k in state:
                v.load_state_dict(state[k], strict=False)  # strict: a state without weights
            attributes = state.get(f"{k}\0attributes", {})
            for name, sub in v.named_modules():
                sub.__dict__.update(attributes.get(name, {}))
