"""What a run leaves behind, as digests: two runs that must leave the same state (an original
and its rewrite) compare these, bitwise, without a copy of the weights.

A fingerprint names, for a target and the inputs it was called with:
- every tensor of its modules' and optimizers' state (weights, buffers, moments);
- each submodule's own attributes: plain values, and lists, dicts, tensors and objects they
  hold (a history a forward appends to, a metrics object it records into), a few levels deep;
- the plain values, containers and objects among the globals of the module that defines it (a
  counter or a list a call updates);
- the inputs after the call (an in-place op on the caller's tensor);
- torch's CPU random generator (an extra draw moves every later one).

With ``values=False`` a floating tensor is only its dtype and shape: what a compiled run, whose
floats may differ within tolerance, can be compared on bitwise.
"""

from __future__ import annotations

import ctypes
import hashlib
import inspect
import types
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from .modelstate import _MODULE_INTERNALS, _TORCH_MARKS, _stateful
from .usercode import Call

# How far into a container or an object a fingerprint looks, and how many items it reads.
_DEPTH = 3
_ITEMS = 64


def fingerprint(fn: Any, call: Call | None = None, *, values: bool = True) -> dict[str, str]:
    out: dict[str, str] = {"rng": _digest(torch.get_rng_state())}
    stateful = _stateful(fn)
    for k, v in stateful.items():
        for name, t in _tensors(v.state_dict()):
            out[f"{k}.{name}" if k else name] = _tensor(t, values)
        if isinstance(v, torch.nn.Module):
            for sub, m in v.named_modules():
                own = not type(m).__module__.startswith("torch.")  # as modelstate saves it
                for a, value in vars(m).items():
                    if a in _MODULE_INTERNALS or a.startswith(_TORCH_MARKS):
                        continue
                    if not own and not isinstance(value, (bool, int, float, str, type(None))):
                        continue
                    key = f"{k}.{sub}:{a}" if k else f"{sub}:{a}"
                    out[key] = _value(value, values, _DEPTH)
    for name, value in _globals(fn).items():
        if name not in stateful:
            out[f"global {name}"] = _value(value, values, _DEPTH)
    if call is not None:
        leaves = tree_flatten((call.args, call.kwargs))[0]
        for i, t in enumerate(leaves):
            if isinstance(t, torch.Tensor):
                out[f"input {i}"] = _tensor(t, values)
    return out


def describe(v: Any) -> str:
    """One value as a fingerprint names it without floating values (a number's value, a
    container's items, an object's attributes, a tensor's dtype and shape)."""
    return _value(v, False, _DEPTH)


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The names whose state differs between two fingerprints (one has it, the other not
    included)."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def attribute_of(key: str) -> str:
    """The attribute a fingerprint's key names (``fc:last_ms`` -> ``last_ms``), else ""."""
    return key.rpartition(":")[2] if ":" in key and not key.startswith("global ") else ""


def _globals(fn: Any) -> dict[str, Any]:
    """The user's globals of the module that defines ``fn``: its function's, or its class's
    ``forward``'s (the module object itself may no longer be imported by its name)."""
    fn = inspect.unwrap(fn)
    code = fn if hasattr(fn, "__globals__") else getattr(type(fn), "forward", None)
    names = getattr(inspect.unwrap(code), "__globals__", None) if code is not None else None
    if not isinstance(names, dict):
        return {}
    return {
        k: v
        for k, v in names.items()
        if not k.startswith("__")
        and not isinstance(v, (types.ModuleType, types.FunctionType, type, torch.nn.Module))
        and not isinstance(v, torch.optim.Optimizer)
        and not callable(v)
        # Logging's own state (a logger's level cache) changes when an output is skipped:
        # skipping it is what a guard is for.
        and not type(v).__module__.startswith("logging")
    }


def _value(v: Any, values: bool, depth: int) -> str:
    if isinstance(v, torch.Tensor):
        return _tensor(v, values)
    if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
        return repr(v)
    if depth <= 0 or isinstance(v, torch.nn.Module):
        return type(v).__name__
    if isinstance(v, (list, tuple)):
        items = [_value(x, values, depth - 1) for x in v[:_ITEMS]]
        return (
            f"{type(v).__name__}[{len(v)}]" + hashlib.sha256("|".join(items).encode()).hexdigest()
        )
    if isinstance(v, (set, frozenset)):
        return (
            f"{type(v).__name__}[{len(v)}]"
            + hashlib.sha256(
                "|".join(sorted(repr(x) for x in list(v)[:_ITEMS])).encode()
            ).hexdigest()
        )
    if isinstance(v, dict):
        items = [f"{k!r}={_value(x, values, depth - 1)}" for k, x in list(v.items())[:_ITEMS]]
        return f"dict[{len(v)}]" + hashlib.sha256("|".join(items).encode()).hexdigest()
    fields = getattr(v, "__dict__", None)
    if isinstance(fields, dict):
        own = {k: x for k, x in fields.items() if not callable(x)}
        return type(v).__name__ + _value(own, values, depth - 1)
    return type(v).__name__


def _tensor(t: torch.Tensor, values: bool) -> str:
    if not values and (t.is_floating_point() or t.is_complex()):
        return f"{t.dtype}{list(t.shape)}"
    return _digest(t)


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
