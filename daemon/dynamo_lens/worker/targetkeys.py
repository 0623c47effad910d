"""The keys the targets of one unit are analysed under: after an edit, a ``compile_example``
that returns several models runs once, and only the targets whose key changed are analysed
again.

A target's key holds what its result can depend on:

- what the example handed over, by value: the model's parameters, buffers and attributes, and
  every call's arguments, tensors by their bytes;
- the source of every workspace definition the target's code can reach (``static.reach``):
  from its class or function, and from each workspace class, function or method found in
  those values (a workspace ``Block`` inside an ``nn.Sequential``, a ``forward`` replaced by a
  helper, a ``partial`` of a method); a library's code is named, not read (libraries change with
  the environment, which the result cache keys separately);
- the example's own reach, less the definitions any target is keyed on: its source, the
  helpers it calls to build models and inputs, the module statements of each.

A value that cannot be read for certain (a file handle, a C object with no state we can see,
more tensor bytes than ``MAX_BYTES``) gives no keys at all, and every target of the unit is
analysed each time, as before. The spans of the definitions in a key go with it, so that a
reused result's lines move with the text (engine/reuse.py).

Targets are independent only if no target's analysis changes what another one sees:
``Watch`` notes the objects more than one target holds and the workspace modules' bindings,
and ``jobs.analyze_job`` gives no keys for a unit where analysing a target changed them.
"""

from __future__ import annotations

import ctypes
import enum
import functools
import hashlib
import inspect
import os
import sys
import types
from dataclasses import dataclass, field
from typing import Any

import torch

from ..static.reach import Reach, Reachability
from ..texts.locate import Workspace
from . import settings
from .usercode import Target, Unit, eager_of, workspace_modules

# One parser per workspace, for the worker's life: modules are parsed once per content.
_REACH: dict[str, Reachability] = {}
# Bounds on a walk: a model's attribute graph is a few thousand objects; past these, no key.
_MAX_NODES = 200_000
_MAX_DEPTH = 48
# Bytes read per unit, tensors, strings and bytes together (sha1 runs at ~1.2 GB/s here), and
# objects walked: past these, keys would cost more than they save, and every target runs.
MAX_BYTES = 512 * 1024 * 1024

Definition = tuple[str, str]  # (real path, top-level name) of a workspace definition


class _Unreadable(Exception):
    """A value whose state the digest cannot see: no keys for the unit."""


@dataclass
class _Values:
    digest: str
    code: set[Definition]  # workspace definitions met in the values
    objects: dict[int, Any] = field(default_factory=dict)  # every object met, by id


def keys_of(targets: list[Target], unit: Unit, ws: Workspace) -> tuple[list[Reach], Watch | None]:
    """Each target's key, in order, and what the targets share; ``[]`` where a key cannot be
    had for every target (then all of them run)."""
    try:
        return _keys(targets, unit, ws)
    except Exception:  # a value no walk foresaw: no keys, never an error
        return [], None


def _keys(targets: list[Target], unit: Unit, ws: Workspace) -> tuple[list[Reach], Watch | None]:
    reachability = _REACH.setdefault(str(ws.root), Reachability(ws.root))
    budget = [MAX_BYTES, _MAX_NODES]  # for the whole unit: a shared value counts each time
    tensors: dict[int, bytes] = {}
    values: list[_Values] = []
    roots: list[set[Definition]] = []
    for target in targets:
        digest = _Digest(ws, tensors, budget)
        try:
            got = digest.of((target.fn, [(c.args, c.kwargs) for c in target.calls]))
        except _Unreadable:
            return [], None
        root = _root(eager_of(target.fn), ws)
        if root is None:
            return [], None
        values.append(_Values(got, digest.code, digest.objects))
        roots.append({r for r in [root, *digest.code] if r[0]})
    # The example's own definition is never stopped (a model class or lambda written inside it
    # makes it a target's root too): its source stays in every key.
    keyed = set().union(*roots) - {(os.path.realpath(unit.path), unit.attr)}
    own = reachability.of(unit.path, unit.attr, stop=frozenset(keyed))
    # What the example left behind besides its values: torch's settings, the environment, the
    # workspace modules' plain state (a constructor or a setup helper may set any of them).
    after = settings.fingerprint().hex() + module_state(ws)
    if own.uncertain == "unparsable":
        return [], None
    # Objects two targets hold: an analysis that changes one changes what the other sees.
    seen: dict[int, int] = {}
    for v in values:
        for i in v.objects:
            seen[i] = seen.get(i, 0) + 1
    shared = {i: o for v in values for i, o in v.objects.items() if seen[i] > 1}
    watch = Watch(ws, shared)
    keys = []
    for target, value, root_set in zip(targets, values, roots, strict=True):
        code = [reachability.of(path, name) for path, name in sorted(root_set)]
        if any(c.uncertain == "unparsable" for c in code):
            return [], None
        spans = {(s.path, s.name): s for r in [own, *code] for s in r.spans}
        head = f"{target.name}\0{target.kind}\0{len(target.calls)}\0{target.positions}\0"
        library = _library(eager_of(target.fn), ws)
        parts = [head, library, own.key, *(c.key for c in code), value.digest, after]
        key = hashlib.sha256("\0".join(parts).encode()).hexdigest()
        modules = sorted({m for r in [own, *code] for m in r.modules})
        why = "; ".join(dict.fromkeys(r.uncertain for r in [own, *code] if r.uncertain))
        keys.append(Reach(key, list(spans.values()), why, modules))
    return keys, watch


def _root(fn: Any, ws: Workspace) -> Definition | None:
    """The top-level workspace definition that holds the target's code; ``("", "")`` for a
    library's code; None where none can be named (a lambda at module level)."""
    if isinstance(fn, types.MethodType):
        fn = fn.__self__ if isinstance(fn.__self__, torch.nn.Module) else fn.__func__
    if isinstance(fn, functools.partial):
        return _root(fn.func, ws)
    obj = fn if inspect.isfunction(fn) or inspect.isclass(fn) else type(fn)
    obj = inspect.unwrap(obj) if inspect.isfunction(obj) else obj
    found = _definition(obj, ws)
    return ("", "") if found is None else (found if found[1] else None)


def _library(fn: Any, ws: Workspace) -> str:
    obj = fn if inspect.isfunction(fn) or inspect.isclass(fn) else type(fn)
    return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"


_FILES: dict[str, str | None] = {}  # module name -> its file, if a workspace one


def _definition(obj: Any, ws: Workspace) -> Definition | None:
    """(file, top-level name) of a class or function defined in a workspace file (the name
    "" where it has none: a lambda); None for a library's."""
    if isinstance(obj, types.FunctionType):
        path = obj.__code__.co_filename
    else:
        module = getattr(obj, "__module__", None)
        if not isinstance(module, str):
            return None
        if module not in _FILES:
            f = getattr(sys.modules.get(module), "__file__", None)
            _FILES[module] = f if isinstance(f, str) else None
        path = _FILES[module] or ""
    if not path or not ws.contains(path):
        return None
    top = getattr(obj, "__qualname__", "").split(".")[0]
    return os.path.realpath(path), top if top.isidentifier() else ""


class Watch:
    """What one target's analysis could change for another: the objects they share and the
    workspace modules' plain state, by value (a global a forward writes, a dict it fills, an
    attribute of a module-level object or class)."""

    def __init__(self, ws: Workspace, shared: dict[int, Any]) -> None:
        self.ws, self.shared = ws, shared
        self.before = self._state()

    def _state(self) -> str:
        h = hashlib.blake2b(digest_size=20)
        walk = _Plain(h, {name for name, _ in workspace_modules(self.ws)})
        for obj in self.shared.values():
            walk.of(obj, 0)
        if walk.left < 0:
            return "too much shared state to watch"  # changed() then says so, each time
        # torch's settings and the environment are put back before each target (jobs.py).
        h.update(module_state(self.ws).encode())
        return h.hexdigest()

    def changed(self) -> bool:
        now = self._state()
        return now != self.before or now == "too much shared state to watch"


def module_state(ws: Workspace) -> str:
    """A digest of the workspace modules' plain state: their globals less code and modules,
    by value (numbers, strings, containers, tensors by version), and the attributes of their
    classes and of objects of workspace classes they hold, a few levels down."""
    h = hashlib.blake2b(digest_size=20)
    modules = sorted(workspace_modules(ws))
    walk = _Plain(h, {name for name, _ in modules})
    for name, _file in modules:
        module = sys.modules.get(name)
        if module is None:
            continue
        h.update(name.encode() + b"\0")
        for key, value in sorted(vars(module).items()):
            if key.startswith("__") or isinstance(value, types.ModuleType):
                continue  # dunders, and what Dynamo adds to a module it compiled
            h.update(key.encode() + b"=")
            walk.of(value, 0)
    return h.hexdigest()


class _Plain:
    """A value's plain state into ``h``: values by value, code and library objects by name,
    objects of the workspace's classes by their attributes; bounded (``_PLAIN_NODES``)."""

    def __init__(self, h: Any, modules: set[str]) -> None:
        self.h, self.modules, self.left = h, modules, _PLAIN_NODES

    def of(self, v: Any, depth: int) -> None:
        h, t = self.h, type(v)
        self.left -= 1
        if v is None or t in (bool, int, float, complex, str, bytes):
            h.update(f"{t.__name__}:{v!r:.4096}\0".encode())
        elif depth > 3 or self.left < 0:
            h.update(b"deep\0")
        elif isinstance(v, torch.Tensor):
            h.update(f"tensor:{tuple(v.shape)}:{v._version}\0".encode())
        elif isinstance(v, dict):
            h.update(f"dict:{len(v)}\0".encode())
            for k, x in list(v.items())[:1000]:
                self.of(k, depth + 1)
                self.of(x, depth + 1)
        elif isinstance(v, list | tuple):
            h.update(f"{t.__name__}:{len(v)}\0".encode())
            for x in list(v)[:1000]:
                self.of(x, depth + 1)
        elif isinstance(v, set | frozenset):
            h.update(f"{t.__name__}:{sorted(map(repr, v))!r:.65536}\0".encode())
        elif isinstance(v, types.FunctionType):
            h.update(f"fn:{v.__qualname__}\0".encode())
            self.of((v.__defaults__, v.__kwdefaults__), depth + 1)
        elif isinstance(v, type):
            h.update(f"class:{v.__qualname__}\0".encode())
            if v.__module__ in self.modules:
                for k, x in sorted(vars(v).items()):
                    if isinstance(x, type) or (not k.startswith("__") and not callable(x)):
                        h.update(k.encode())
                        self.of(x, depth + 1)  # a class attribute, a nested class
        elif t.__module__ in self.modules and isinstance(getattr(v, "__dict__", None), dict):
            h.update(f"obj:{t.__module__}.{t.__qualname__}\0".encode())
            for k, x in sorted(vars(v).items(), key=lambda kv: str(kv[0]))[:1000]:
                h.update(str(k).encode())
                self.of(x, depth + 1)
        else:
            h.update(f"{t.__module__}.{t.__qualname__}\0".encode())


_PLAIN_NODES = 50_000


class _Digest:
    """A digest of a value's state: its type and contents, through containers, modules and
    objects' attributes; shared objects are digested once and then named by first position
    (two entries holding the same model differ from two holding equal copies)."""

    def __init__(self, ws: Workspace, tensors: dict[int, bytes], budget: list[int]) -> None:
        self.ws, self.tensors, self.budget = ws, tensors, budget
        self.h = hashlib.blake2b(digest_size=20)
        self.seen: dict[int, int] = {}
        self.objects: dict[int, Any] = {}
        self.code: set[Definition] = set()

    def of(self, value: Any) -> str:
        self._walk(value, 0)
        return self.h.hexdigest()

    def _spend(self, size: int) -> None:
        self.budget[0] -= size
        if self.budget[0] < 0:
            raise _Unreadable("more bytes than a key may read")

    def _put(self, *parts: object) -> None:
        self.h.update("\0".join(map(str, parts)).encode() + b"\1")

    def _code(self, obj: Any) -> None:
        found = _definition(obj, self.ws)
        if found is not None:
            if not found[1]:
                raise _Unreadable("a lambda of the workspace's at module level")
            self.code.add(found)

    def _walk(self, v: Any, depth: int) -> None:
        self.budget[1] -= 1
        if self.budget[1] < 0 or depth > _MAX_DEPTH:
            raise _Unreadable("too large")
        t = type(v)
        if isinstance(v, str | bytes | bytearray):
            self._spend(len(v))
        if v is None or t in (bool, int, float, complex, str):
            self._put(t.__name__, repr(v) if t is not int or abs(v) < 1 << 64 else hex(v))
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
        self.objects[id(v)] = v
        if isinstance(v, torch.Tensor):
            # A tensor costs ~20 objects' time (its memory hashed, its layout read): a list of
            # 190k small ones would otherwise take seconds.
            self.budget[1] -= 20
            self._tensor(v)
            return
        if not isinstance(v, type | types.FunctionType | types.MethodType | types.ModuleType):
            self._code(t)  # an instance of a workspace class: its code is in the key
        if isinstance(v, bool | int | float | complex | str | bytes):  # a subclass
            self._put(t.__module__, t.__qualname__, repr(v) if len(repr(v)) < 1 << 16 else "")
        elif isinstance(v, list | tuple):  # torch.Size and named tuples too
            self._put(t.__qualname__, len(v))
            for x in v:
                self._walk(x, depth + 1)
        elif isinstance(v, dict):
            self._put(t.__qualname__, len(v))
            for k, x in list(v.items()):
                self._walk(k, depth + 1)
                self._walk(x, depth + 1)
        elif isinstance(v, set | frozenset):
            if any(type(x) not in (bool, int, float, str, type(None)) for x in v):
                raise _Unreadable("a set of objects")
            self._put(t.__name__, *sorted(repr(x) for x in v))
        elif isinstance(v, type):
            self._code(v)
            self._put("type", v.__module__, v.__qualname__)
            return
        elif isinstance(v, types.FunctionType):
            self._function(v, depth)
            return
        elif isinstance(v, types.MethodType):
            self._put("method", v.__func__.__qualname__)
            self._walk(v.__func__, depth + 1)
            self._walk(v.__self__, depth + 1)
            return
        elif isinstance(v, types.BuiltinFunctionType | types.ModuleType):
            self._put(t.__name__, getattr(v, "__module__", ""), getattr(v, "__qualname__", v))
            return
        elif isinstance(v, functools.partial):
            self._put("partial")
            self._walk((v.func, v.args, v.keywords), depth + 1)
        elif not (hasattr(v, "__dict__") or hasattr(t, "__slots__")):
            raise _Unreadable(t.__qualname__)
        else:
            self._put("object", t.__module__, t.__qualname__)
        # The attributes of an object, or of a subclass of a builtin (a dict that is also a
        # config object).
        state = dict(vars(v)) if isinstance(getattr(v, "__dict__", None), dict) else {}
        for name in _slots(t):
            if hasattr(v, name):
                state[name] = getattr(v, name)
        if state or t not in (list, tuple, dict, set, frozenset):
            self._walk(state, depth + 1)

    def _function(self, fn: types.FunctionType, depth: int) -> None:
        # A workspace function's source is in the key by its reach; its code object by value
        # here too, for a lambda or a local function the example made.
        self._code(fn)
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
        self._put(t.device.type, t.stride(), t.storage_offset(), t.is_conj(), t.is_neg())
        attrs = {k: v for k, v in vars(t).items()} if hasattr(t, "__dict__") else {}
        if attrs:
            self._walk(attrs, 1)
        if t.device.type == "meta" or t.numel() == 0:
            return
        if id(t) not in self.tensors:
            self.tensors[id(t)] = self._bytes(t)
        self.h.update(self.tensors[id(t)])

    def _bytes(self, t: torch.Tensor) -> bytes:
        """sha1 of the memory the tensor reads: its storage where a copy would be larger (an
        expanded tensor), else its elements in order."""
        data = t.detach()
        if data.device.type != "cpu":
            data = data.cpu()
        storage = data.untyped_storage()
        view_bytes = data.numel() * data.element_size()
        if data.is_contiguous():
            raw, size = data, view_bytes
        elif storage.nbytes() <= view_bytes:
            raw, size = None, storage.nbytes()  # the whole storage (shape, strides in the key)
        else:
            raw = data.resolve_conj().resolve_neg().contiguous()
            size = view_bytes
        self._spend(size)
        ptr = storage.data_ptr() if raw is None else raw.data_ptr()
        # The memory as a buffer, read in place (no numpy, no copy).
        memory = (ctypes.c_char * size).from_address(ptr)
        return hashlib.sha1(memory).digest()


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
