"""What a target computes with that keeps state between calls, saved and put back: the
parameters and buffers of its modules (``state_dict``), their plain Python attributes (a step
counter), and a training step's optimizers. Two runs that must be compared (eager and compiled,
an original and its rewrite) start from the same state."""

from __future__ import annotations

import copy
import ctypes
import hashlib
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
# Attributes torch itself sets on a module it compiled: no state of the user's.
_TORCH_MARKS = ("_is_torch_compile", "_torchdynamo", "_dynamo", "_compiled_call_impl")


def _attributes(m: torch.nn.Module) -> dict[str, dict[str, Any]]:
    """Each submodule's plain Python attributes (a step counter, a cached length): state a
    forward may change that ``state_dict`` does not hold."""
    return {
        name: {
            k: v
            for k, v in sub.__dict__.items()
            if type(v) in _PLAIN and not k.startswith(_TORCH_MARKS)
        }
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


def fingerprint(fn: Any) -> dict[str, str]:
    """What ``fn``'s state holds now, by name, as digests (bitwise, without a copy of the
    weights): every tensor of its modules' and optimizers' state, their plain attributes, and
    torch's CPU random generator. Two runs that must leave the same state compare these."""
    out: dict[str, str] = {"rng": _digest(torch.get_rng_state())}
    for k, v in _stateful(fn).items():
        for name, t in _tensors(v.state_dict()):
            out[f"{k}.{name}" if k else name] = _digest(t)
        if isinstance(v, torch.nn.Module):
            for name, attrs in _attributes(v).items():
                for a, value in sorted(attrs.items()):
                    out[f"{k}.{name}:{a}" if k else f"{name}:{a}"] = repr(value)
    return out


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The names whose state differs between two fingerprints (one has it, the other not
    included)."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def _tensors(tree: Any, prefix: str = "") -> list[tuple[str, torch.Tensor]]:
    if isinstance(tree, torch.Tensor):
        return [(prefix, tree)]
    if isinstance(tree, dict):
        return [
            p for k, v in tree.items() for p in _tensors(v, f"{prefix}.{k}" if prefix else str(k))
        ]
    if isinstance(tree, (list, tuple)):
        return [p for i, v in enumerate(tree) for p in _tensors(v, f"{prefix}[{i}]")]
    return []


def _digest(t: torch.Tensor) -> str:
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    # The tensor's bytes without numpy (a user's interpreter need not have it): a contiguous
    # copy, read by address.
    flat = t.contiguous().reshape(-1).clone()
    nbytes = flat.numel() * flat.element_size()
    data = ctypes.string_at(flat.data_ptr(), nbytes) if nbytes else b""
    return f"{t.dtype}{list(t.shape)}:" + hashlib.sha256(data).hexdigest()
