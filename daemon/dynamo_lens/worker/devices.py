"""Which devices exist, and putting a target and its inputs on one of them."""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch.utils._pytree import tree_map

from .usercode import Call


def available() -> list[str]:
    devs = ["cpu"]
    if torch.cuda.is_available():
        devs += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    return devs


def resolve(requested: list[str]) -> tuple[list[str], list[str]]:
    """(devices to use, requested devices that are not present)."""
    present = available()
    out: list[str] = []
    missing: list[str] = []
    for d in requested:
        if d == "auto":
            out += present
        elif d == "cuda":
            cuda = [p for p in present if p.startswith("cuda")]
            out += cuda[:1]
            if not cuda:
                missing.append(d)
        elif d in present:
            out.append(d)
        else:
            missing.append(d)
    return list(dict.fromkeys(out)), missing


def describe(device: str) -> str:
    if device.startswith("cuda"):
        return f"{device} ({torch.cuda.get_device_name(torch.device(device))})"
    return device


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(torch.device(device))


def place(fn: Any, call: Call, device: str) -> tuple[Any, Call]:
    """A copy of the target and inputs on ``device``; the original stays where it was."""

    def move(v: Any) -> Any:
        return v.to(device) if isinstance(v, torch.Tensor) else v

    if isinstance(fn, torch.nn.Module):
        try:
            fn = copy.deepcopy(fn)
        except Exception:
            pass  # not copyable: move in place; later devices copy from wherever it is
        fn = fn.to(device)
    args = tree_map(move, list(call.args))
    kwargs = tree_map(move, dict(call.kwargs))
    return fn, Call(tuple(args), kwargs)
