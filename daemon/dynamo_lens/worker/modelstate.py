"""What a target computes with that keeps state between calls, saved and put back: the
parameters and buffers of its modules (``state_dict``), their plain Python attributes (a step
counter), and a training step's optimizers. Two runs that must be compared (eager and compiled,
an original and its rewrite) start from the same state."""

from __future__ import annotations

import copy
import inspect
import types
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
# Attributes torch itself sets on a module it compiled: no state of the user's.
_TORCH_MARKS = ("_is_torch_compile", "_torchdynamo", "_dynamo", "_compiled_call_impl")


# A module's own bookkeeping (its parameters, buffers, children and hooks), not the user's
# state; whether it trains is.
_MODULE_INTERNALS = frozenset(vars(torch.nn.Module())) - {"training"}


def _attributes(m: torch.nn.Module) -> dict[str, dict[str, Any]]:
    """Each submodule's own Python attributes: plain values (a step counter, a cached length)
    and copies of the containers and plain objects it holds (a history a forward appends to,
    a metrics object it records into): state a forward may change that ``state_dict`` does
    not hold. What cannot be copied (a lock, a file) is left out."""
    out: dict[str, dict[str, Any]] = {}
    for name, sub in m.named_modules():
        kept: dict[str, Any] = {}
        # torch's own layers keep internals there (an RNN's list of its weights): their plain
        # values only.
        own = not type(sub).__module__.startswith("torch.")
        for k, v in sub.__dict__.items():
            if k in _MODULE_INTERNALS or k.startswith(_TORCH_MARKS):
                continue
            if type(v) in _PLAIN:
                kept[k] = v
            elif own and _held(v):
                try:
                    kept[k] = copy.deepcopy(v)
                except Exception:  # not copyable: not compared, not put back
                    continue
        out[name] = kept
    return out


def _held(v: Any) -> bool:
    """A container, a tensor kept as a plain attribute, or an object of the user's (not a
    module, a function or a class), holding no parameter (a copy would stand in for it)."""
    if isinstance(v, torch.nn.Parameter):
        return False
    if isinstance(v, (list, tuple, set)):
        return not any(isinstance(x, torch.nn.Parameter) for x in v)
    if isinstance(v, dict):
        return not any(isinstance(x, torch.nn.Parameter) for x in v.values())
    if isinstance(v, torch.Tensor):
        return True
    return (
        hasattr(v, "__dict__")
        and not callable(v)
        and not isinstance(v, (torch.nn.Module, type, types.ModuleType))
    )


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
                # A copy each time: the runs that start from it must not share a list.
                sub.__dict__.update(
                    {
                        a: value if type(value) in _PLAIN else copy.deepcopy(value)
                        for a, value in attributes.get(name, {}).items()
                    }
                )
