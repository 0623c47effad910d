"""What the last check found in each target, kept for the verification of a rewrite of it:
the check has just traced the original (its breaks) and compiled it over its calls (its
recompiles), so the verification need not do either again (the editor's "Verify, then apply"
follows a check of the same file; a recompile's fix is verified against the original's
recompile check, the costliest of its compiles).

A kept result is used only when the original it would stand for is the one checked: every
workspace file the check had imported has the same bytes, no other workspace file is imported
now, torch's compiler settings and the calls' inputs describe the same, and for recompiles,
the check's settings and what the target held when it started (a counter an earlier call
moved recompiles differently) are the same. Anything else runs again, so a stale entry costs
time, never a wrong verdict.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
import types
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from ..findings import Finding
from ..texts.locate import Workspace
from . import settings
from .fingerprint import describe, fingerprint
from .recompiles import RecompileResult, describe_call
from .usercode import Call, Target, workspace_modules

# Enough for the files a user has open; the oldest go first.
_KEEP = 32


@dataclass(frozen=True)
class _Traced:
    files: dict[str, str]  # workspace file -> sha1 of its bytes, when traced
    context: str  # torch's settings and the call's inputs, described
    findings: list[Finding]


_LAST: dict[tuple[str, str], _Traced] = {}


@dataclass(frozen=True)
class _Compiled:
    files: dict[str, str]
    context: str  # as _Traced's, over every call, with the check's settings and the state
    result: RecompileResult


_COMPILED: dict[tuple[str, str], _Compiled] = {}


def _digest(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return hashlib.sha1(f.read()).hexdigest()
    except OSError:
        return ""


def _context(call: Call) -> str:
    h = hashlib.sha1()
    h.update(settings.fingerprint())
    h.update(describe_call(call).encode())
    return h.hexdigest()


def _files(ws: Workspace) -> dict[str, str]:
    return {os.path.realpath(f): _digest(f) for _, f in workspace_modules(ws)}


def _keep(store: dict[tuple[str, str], Any], key: tuple[str, str], kept: Any) -> None:
    store.pop(key, None)
    while len(store) >= _KEEP:
        store.pop(next(iter(store)))
    store[key] = kept


def _same_files(files: dict[str, str], ws: Workspace) -> bool:
    now = {os.path.realpath(f) for _, f in workspace_modules(ws)}
    return now <= files.keys() and all(_digest(f) == sha for f, sha in files.items())


def remember(path: str, target: str, call: Call, ws: Workspace, findings: list[Finding]) -> None:
    """Keep what the check of ``target`` (a target of the file ``path``) found, untouched."""
    kept = _Traced(_files(ws), _context(call), list(findings))
    _keep(_LAST, (os.path.realpath(path), target), kept)


def recall(path: str, target: str, call: Call, ws: Workspace) -> list[Finding] | None:
    """What the last check of ``target`` found, if the original now imported is the one it
    traced; else None."""
    kept = _LAST.get((os.path.realpath(path), target))
    if kept is None or kept.context != _context(call) or not _same_files(kept.files, ws):
        return None
    return list(kept.findings)


def recompile_context(t: Target, how: tuple[Any, ...], ws: Workspace) -> str:
    """What a recompile check of ``t`` depends on besides the files, described before it runs:
    torch's settings, the check's own (``how``: dynamic, limit, probes), each call's inputs as
    torch guards on them (a tensor's dtype, shape, strides and the dimensions marked dynamic; a
    number's value; an object's attributes), what the target holds but its floating values (an
    int attribute, a counter, a flag), its classes' attributes, a function's closure and the
    plain values of every workspace module (a counter a call moves anywhere torch guards on).
    Not tensors' values: a check is recalled only where its calls broke nowhere, and without a
    break no value chose a path. Not torch's random generator: a draw moves it but guards on
    none of it."""
    h = hashlib.sha1()
    h.update(settings.fingerprint())
    h.update(repr(how).encode())
    h.update(_held_elsewhere(t.fn, ws).encode())
    for call in t.calls:
        h.update(b"|call")
        for leaf in tree_flatten((call.args, call.kwargs))[0]:
            if isinstance(leaf, torch.Tensor):
                marks = sorted(getattr(leaf, "_dynamo_dynamic_indices", ()) or ())
                said = f"{leaf.dtype}{list(leaf.shape)}{leaf.stride()}{leaf.requires_grad}"
                h.update(f"{said}{leaf.device}{marks}".encode())
            else:
                h.update(describe(leaf).encode())
    held = fingerprint(t.fn, None, values=False)
    held.pop("rng", None)
    h.update(repr(sorted(held.items())).encode())
    return h.hexdigest()


def _held_elsewhere(fn: Any, ws: Workspace) -> str:
    """The plain values a call can read besides the target's own attributes: its modules'
    classes' attributes, a function's closure, and the workspace modules' globals."""
    said: list[str] = []
    objs = list(fn.modules()) if isinstance(fn, torch.nn.Module) else [fn]
    for obj in objs:
        for cls in type(obj).__mro__:
            if cls.__module__.startswith(("torch.", "builtins")):
                continue
            for k, v in vars(cls).items():
                if not k.startswith("__") and not callable(v) and not isinstance(v, property):
                    said.append(f"{cls.__qualname__}.{k}={describe(v)}")
    for cell in getattr(inspect.unwrap(fn), "__closure__", None) or ():
        try:
            said.append(describe(cell.cell_contents))
        except ValueError:  # an empty cell
            said.append("<empty>")
    # The workspace modules its code is defined in, and those they import (not every module
    # the warm worker holds: another file's would make the same check look different).
    todo = [
        sys.modules.get(getattr(o, "__module__", "") or type(o).__module__) for o in [fn, *objs]
    ]
    seen: dict[str, types.ModuleType] = {}
    while todo:
        module = todo.pop()
        path = getattr(module, "__file__", None)
        if module is None or module.__name__ in seen or not path or not ws.contains(path):
            continue
        seen[module.__name__] = module
        todo += [v for v in vars(module).values() if isinstance(v, types.ModuleType)]
    for name, module in sorted(seen.items()):
        for k, v in sorted(vars(module).items()):
            if k.startswith("__") or callable(v) or isinstance(v, types.ModuleType):
                continue
            said.append(f"{name}.{k}={describe(v)}")
    return "|".join(said)


def remember_recompiles(
    path: str, t: Target, ws: Workspace, context: str, result: RecompileResult
) -> None:
    """Keep the recompile check of ``t`` (a target of the file ``path``), whose
    ``recompile_context`` was ``context`` when it started."""
    _keep(_COMPILED, (os.path.realpath(path), t.name), _Compiled(_files(ws), context, result))


def recall_recompiles(
    path: str, t: Target, ws: Workspace, how: tuple[Any, ...]
) -> RecompileResult | None:
    """The last recompile check of ``t``, if it started from what ``t`` is now; else None."""
    kept = _COMPILED.get((os.path.realpath(path), t.name))
    # Only a check that broke nowhere: a break lets a tensor's value (a buffer an earlier call
    # moved) choose what torch compiles next, and the context holds no values.
    if kept is None or not kept.result.unbroken or not _same_files(kept.files, ws):
        return None
    return kept.result if kept.context == recompile_context(t, how, ws) else None
