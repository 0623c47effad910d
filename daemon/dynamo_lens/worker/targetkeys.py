"""The key one target of a unit is analysed under: after an edit, a ``compile_example`` that
returns several models runs once, and only the targets whose key changed are analysed again.

A target's key holds what its result can depend on:

- the source its code reaches (``static.reach``: its class or function, what that names, the
  statements of each module reached), or its qualified name where that code is a library's
  (libraries change with the environment, which the result cache keys separately);
- the example that built it: that definition's own source and its module's statements (an
  edit there may change any target it returns);
- what the example handed over, by value: the model's parameters, buffers and attributes, and
  every call's arguments, tensors by their bytes. Two targets built by the same lines from
  other weights or inputs differ; a value that cannot be read for certain (a file handle, a
  C object with no state we can see) gives no key, and the target is analysed every time.

The spans of the definitions in the key go with it, so that a reused result's lines move with
the text (engine/reuse.py).
"""

from __future__ import annotations

import ctypes
import enum
import functools
import hashlib
import inspect
import os
import types
from typing import Any

import torch

from ..static.reach import Reach, Reachability
from ..texts.locate import Workspace
from .usercode import Target, Unit, eager_of

# One parser per workspace, for the worker's life: modules are parsed once per content.
_REACH: dict[str, Reachability] = {}
# Bounds on a walk: a model's attribute graph is a few thousand objects; past these, no key.
_MAX_NODES = 200_000
_MAX_DEPTH = 48


class _Unreadable(Exception):
    """A value whose state the digest cannot see: no key for the target."""


def key_of(
    target: Target, unit: Unit, ws: Workspace, tensors: dict[tuple[int, ...], bytes]
) -> Reach | None:
    """The target's key and the spans it covers, or None where it cannot be had.
    ``tensors``: digests of tensors already read in this job (the targets of one example
    often share a model), by identity, address and version."""
    reachability = _REACH.setdefault(str(ws.root), Reachability(ws.root))
    own = reachability.own(unit.path, unit.attr)
    code = _code_reach(eager_of(target.fn), ws, reachability)
    if own is None or code is None:
        return None
    try:
        values = _Digest(tensors).of((target.fn, [(c.args, c.kwargs) for c in target.calls]))
    except _Unreadable:
        return None
    spans = {(s.path, s.name): s for s in [*own.spans, *code.spans]}
    head = f"{target.name}\0{target.kind}\0{len(target.calls)}\0{target.positions}\0"
    key = hashlib.sha256(f"{head}{own.key}\0{code.key}\0{values}".encode()).hexdigest()
    modules = sorted({*own.modules, *code.modules})
    return Reach(key, list(spans.values()), code.uncertain, modules)


def _code_reach(fn: Any, ws: Workspace, reachability: Reachability) -> Reach | None:
    """What the target's code reaches: from the top-level definition that holds it."""
    if isinstance(fn, types.MethodType):
        fn = fn.__self__ if isinstance(fn.__self__, torch.nn.Module) else fn.__func__
    if isinstance(fn, functools.partial):
        fn = fn.func
    obj = fn if inspect.isfunction(fn) or inspect.isclass(fn) else type(fn)
    obj = inspect.unwrap(obj) if inspect.isfunction(obj) else obj
    try:
        source = inspect.getsourcefile(obj)
    except TypeError:
        source = None
    qualname = getattr(obj, "__qualname__", "")
    if not source or not ws.contains(source):
        # A library's code (or a builtin): named, not read.
        return Reach(f"library {getattr(obj, '__module__', '')}.{qualname}")
    top = qualname.split(".")[0]
    if not top.isidentifier():
        return None  # a lambda at module level: no definition of its own to key on
    reach = reachability.of(os.path.realpath(source), top)
    return None if reach.uncertain == "unparsable" else reach


class _Digest:
    """A digest of a value's state: its type and contents, through containers, modules and
    objects' attributes; shared objects are digested once and then named by first position
    (two entries holding the same model differ from two holding equal copies)."""

    def __init__(self, tensors: dict[tuple[int, ...], bytes]) -> None:
        self.tensors = tensors
        self.h = hashlib.blake2b(digest_size=20)
        self.seen: dict[int, int] = {}
        self.keep: list[Any] = []  # what ``seen`` names stays alive until the walk ends
        self.nodes = 0

    def of(self, value: Any) -> str:
        self._walk(value, 0)
        return self.h.hexdigest()

    def _put(self, *parts: object) -> None:
        self.h.update("\0".join(map(str, parts)).encode() + b"\1")

    def _walk(self, v: Any, depth: int) -> None:
        self.nodes += 1
        if self.nodes > _MAX_NODES or depth > _MAX_DEPTH:
            raise _Unreadable("too large")
        t = type(v)
        if v is None or t in (bool, int, float, complex, str):
            self._put(t.__name__, repr(v))
            return
        if t is bytes:
            self._put("bytes", len(v))
            self.h.update(v)
            return
        if isinstance(v, torch.dtype | torch.device | torch.layout | torch.memory_format):
            self._put(t.__name__, v)
            return
        if isinstance(v, enum.Enum):
            self._put(t.__qualname__, repr(v))
            return
        if id(v) in self.seen:
            self._put("ref", self.seen[id(v)])
            return
        self.seen[id(v)] = len(self.seen)
        self.keep.append(v)
        if isinstance(v, torch.Tensor):
            self._tensor(v)
        elif isinstance(v, list | tuple):  # torch.Size and named tuples too
            self._put(t.__qualname__, len(v))
            for x in v:
                self._walk(x, depth + 1)
        elif isinstance(v, dict):
            self._put(t.__qualname__, len(v))
            for k, x in v.items():
                self._walk(k, depth + 1)
                self._walk(x, depth + 1)
        elif isinstance(v, set | frozenset):
            items = sorted(repr(x) for x in v)
            if any(type(x) not in (bool, int, float, str, type(None)) for x in v):
                raise _Unreadable("a set of objects")
            self._put(t.__name__, *items)
        elif isinstance(v, type):
            self._put("type", v.__module__, v.__qualname__)
        elif isinstance(v, types.FunctionType):
            self._function(v, depth)
        elif isinstance(v, types.MethodType):
            self._put("method", v.__func__.__qualname__)
            self._walk(v.__self__, depth + 1)
        elif isinstance(v, types.BuiltinFunctionType | types.ModuleType):
            self._put(t.__name__, getattr(v, "__module__", ""), getattr(v, "__qualname__", v))
        elif isinstance(v, functools.partial):
            self._put("partial")
            self._walk((v.func, v.args, v.keywords), depth + 1)
        elif hasattr(v, "__dict__") or hasattr(t, "__slots__"):
            self._put("object", t.__module__, t.__qualname__)
            state = dict(getattr(v, "__dict__", {}))
            for name in _slots(t):
                if hasattr(v, name):
                    state[name] = getattr(v, name)
            self._walk(state, depth + 1)
        else:
            raise _Unreadable(t.__qualname__)

    def _function(self, fn: types.FunctionType, depth: int) -> None:
        # A workspace function's source is in the key by reach; its code object by value here
        # too, for a lambda or a local function the example made.
        code = fn.__code__
        self._put("function", fn.__module__, fn.__qualname__, code.co_names, code.co_varnames)
        self.h.update(code.co_code)
        consts = tuple(c for c in code.co_consts if not isinstance(c, types.CodeType))
        self._walk(
            (consts, fn.__defaults__, fn.__kwdefaults__, [c.cell_contents for c in _cells(fn)]),
            depth + 1,
        )

    def _tensor(self, t: torch.Tensor) -> None:
        if t.layout != torch.strided or t.is_quantized or type(t) not in _PLAIN_TENSORS:
            raise _Unreadable("a tensor subclass, a sparse or quantized tensor")
        self._put("tensor", type(t).__name__, t.dtype, tuple(t.shape), t.requires_grad)
        self._put(t.device.type, t.stride(), t.storage_offset())
        if t.device.type == "meta" or t.numel() == 0:
            return
        known = (id(t), t.data_ptr(), t._version)
        if known not in self.tensors:
            data = t.detach()
            if data.device.type != "cpu":
                data = data.cpu()
            raw = data.contiguous().reshape(-1).view(torch.uint8)
            # The tensor's memory as a buffer, read in place (no numpy, no copy).
            memory = (ctypes.c_char * raw.numel()).from_address(raw.data_ptr())
            self.tensors[known] = hashlib.blake2b(memory, digest_size=20).digest()
        self.h.update(self.tensors[known])


_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter, torch.nn.parameter.Buffer)


def _slots(t: type) -> list[str]:
    out = []
    for c in t.__mro__:
        names = getattr(c, "__slots__", ())
        out += [names] if isinstance(names, str) else [n for n in names if isinstance(n, str)]
    return [n for n in out if n not in ("__dict__", "__weakref__")]


def _cells(fn: types.FunctionType) -> list[Any]:
    out = []
    for cell in fn.__closure__ or ():
        try:
            cell.cell_contents  # noqa: B018 (an empty cell raises)
        except ValueError:
            continue
        out.append(cell)
    return out
