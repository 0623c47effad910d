"""Importing the user's files and turning them into analysis units and calls.

A *unit* is what one worker job analyses: an example function (``compile_example*`` or one named
in configuration) or a zero-config guess (an argument-free ``nn.Module`` class). Running a unit
yields *targets*: the distinct callables its calls use, each with its input variants.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import random
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..config import is_example_name
from ..findings import TargetId
from ..texts.locate import Workspace, call_site_line, definition_line
from ..wire import Unit
from . import torchcompat
from .markable import (
    markable_args,
    nested_paths,
    reached_elsewhere,
    scalar_args,
    top_level_tensors,
    varying_dims,
)


@dataclass
class Call:
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@dataclass
class Target:
    name: str  # unique within the file: "compile_example", "compile_example[1]", "guess:MLP"
    fn: Any  # the nn.Module instance or function
    calls: list[Call]
    path: str  # where the target is defined (its class or def)
    line: int
    kind: str  # example | config | guess
    guess: bool = False
    # Where the user hands the target over (the example's return): breaks and recompiles
    # inside library code, with no workspace frame of their own, are shown here.
    call_site: tuple[str, int, str] = ("", 0, "")
    # For a fix that marks an argument in the example's own calls (fixes/dynamic.py): the
    # entries of its returned list that are this target's (None: it returned one call), and
    # the positions (in an args tuple) or keywords (in a kwargs dict) of arguments that every
    # one of them passes as a tensor of its own, shared with no other target's call (a mark on
    # a shared tensor would change how torch compiles that other target too).
    positions: tuple[int, ...] | None = None
    markable: frozenset[int | str] = frozenset()
    # The positions or keywords where every one of its entries passes a Python number (an int
    # or a float, not a bool): a fix may pass it as a 0-d tensor (fixes/dynamic.py).
    scalars: frozenset[int | str] = frozenset()
    # Of the markable ones, the dimensions whose size differs across its calls (declared
    # variants): a fix marking one size marks those that vary with it (a mask with its input).
    varying: dict[int | str, tuple[int, ...]] = field(default_factory=dict)
    # Tensors inside a container argument (a batch dict): by position or keyword, the key
    # paths where every one of its calls holds a tensor nothing else reaches.
    nested: dict[int | str, frozenset[tuple[int | str, ...]]] = field(default_factory=dict)


def module_name_for(path: Path, ws: Workspace) -> str:
    """A dotted name when the file sits in an importable package path, so that
    ``from models.common import x`` in user code and our import agree on one module object."""
    try:
        rel = Path(path).resolve().relative_to(ws.root)
    except ValueError:
        rel = None
    if rel is not None:
        parts = [*rel.parent.parts, rel.stem]
        if all(p.isidentifier() for p in parts):
            return ".".join(parts)
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:12]
    return f"_dynamo_lens_{digest}"


# Modules known not to be the user's, per workspace, by name and object: torch's ~2.4k modules
# are asked about twice per file (purge, imports), and an identity check is the cheapest answer.
_NOT_USER: dict[tuple[str, tuple[str, ...]], dict[str, object]] = {}


def workspace_modules(ws: Workspace) -> list[tuple[str, str]]:
    """(module name, file) of every imported module that is a workspace file."""
    known = _NOT_USER.setdefault((str(ws.root), ws.excludes), {})
    out = []
    for name, mod in list(sys.modules.items()):
        if known.get(name) is mod:
            continue
        # The module's dict, not getattr: lazy modules (torch.ops, ...) run hooks on a miss.
        f = getattr(mod, "__dict__", {}).get("__file__")
        if isinstance(f, str) and ws.contains(f):
            out.append((name, f))
        else:
            known[name] = mod
    return out


def purge_workspace_modules(ws: Workspace) -> None:
    """Forget every user module so edited helpers are re-imported on the next job, and from
    Dynamo's cache of modules by name too."""
    for name, _ in workspace_modules(ws):
        del sys.modules[name]
    torchcompat.forget_imported_modules()


def package_path(path: Path) -> tuple[Path, str] | None:
    """(the directory to put on sys.path, the dotted name) of a file inside a regular package,
    found as ``python -m`` would: up through every directory with an ``__init__.py``."""
    path = path.resolve()
    parts = [] if path.name == "__init__.py" else [path.stem]
    d = path.parent
    while (d / "__init__.py").is_file() and d.name.isidentifier():
        parts.insert(0, d.name)
        d = d.parent
    if not parts or (len(parts) == 1 and path.name != "__init__.py"):
        return None
    return d, ".".join(parts)


def _same_file(module: types.ModuleType, path: Path) -> bool:
    f = getattr(module, "__file__", None)
    return isinstance(f, str) and Path(f).resolve() == path.resolve()


def import_file(path: Path, ws: Workspace) -> types.ModuleType:
    for p in (str(path.parent), str(ws.root)):
        if p not in sys.path:
            sys.path.insert(0, p)
    pkg = package_path(path)
    if pkg is not None:
        # By its package path, parents first: `from pkg.layers import X` inside
        # pkg/layers/block.py then finds pkg.layers complete, not a half-imported copy.
        root, dotted = pkg
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
        module = importlib.import_module(dotted)
        if _same_file(module, path):
            return module
    name = module_name_for(path, ws)
    existing = sys.modules.get(name)
    if existing is not None and getattr(existing, "__file__", None) == str(path):
        return existing
    spec = importlib.util.spec_from_file_location(name, str(path))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _unwrapped(obj: Any) -> Any:
    """What a decorator that keeps the function wraps (``__wrapped__``), else ``obj``."""
    try:
        return inspect.unwrap(obj) if callable(obj) else obj
    except ValueError:  # a __wrapped__ chain that loops
        return obj


def _defined_here(obj: Any, path: Path) -> bool:
    try:
        src = inspect.getsourcefile(obj)
    except (TypeError, OSError):
        return False
    return src is not None and Path(src).resolve() == path.resolve()


def _constructible_without_args(cls: type) -> bool:
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return False
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is p.empty:
            return False
    return True


def discover(
    module: types.ModuleType,
    path: Path,
    config_targets: list[str],
    guess: bool,
    skip: set[str] | frozenset[str] = frozenset(),
) -> list[Unit]:
    units: list[Unit] = []
    for attr, obj in vars(module).items():
        # Through a decorator that keeps the function (``functools.lru_cache``, ``wraps``):
        # the example is still the user's, defined here.
        fn = _unwrapped(obj)
        if is_example_name(attr) and callable(obj) and _defined_here(fn, path):
            line = fn.__code__.co_firstlineno if hasattr(fn, "__code__") else 1
            units.append(Unit(attr, "example", str(path), line, attr))
    for attr in config_targets:
        obj = getattr(module, attr, None)
        if obj is None:
            continue
        line = definition_line(str(path), attr) or 1
        units.append(Unit(f"config:{attr}", "config", str(path), line, attr))
    if guess and not units:
        for attr, obj in vars(module).items():
            if (
                isinstance(obj, type)
                and attr not in skip
                and issubclass(obj, nn.Module)
                and obj.__module__ == module.__name__
                and _constructible_without_args(obj)
                and _defined_here(obj, path)
            ):
                line = definition_line(str(path), obj.__qualname__) or 1
                units.append(Unit(f"guess:{attr}", "guess", str(path), line, attr))
    return units


class ExampleError(Exception):
    """The example function returned something that is not a call description."""


def _as_call(item: Any, where: str) -> tuple[Any, Call]:
    if not isinstance(item, tuple) or len(item) not in (2, 3):
        raise ExampleError(
            f"{where} must return (target, args) or (target, args, kwargs) or a list of them; "
            f"got {type(item).__name__}"
        )
    target, args = item[0], item[1]
    kwargs = item[2] if len(item) == 3 else {}
    if not callable(target):
        raise ExampleError(f"{where}: the target {target!r:.80} is not callable")
    if isinstance(args, torch.Tensor) or not isinstance(args, (tuple, list)):
        args = (args,)
    if not isinstance(kwargs, dict):
        raise ExampleError(f"{where}: kwargs must be a dict, got {type(kwargs).__name__}")
    return target, Call(tuple(args), dict(kwargs))


def compiled_from(fn: Any) -> Any:
    """The function ``fn`` is torch.compile's own wrapper of, else None. A user's wrapper made
    with ``functools.wraps`` around a compiled function copies torch's attribute too, but wraps
    the compiled function, not the one torch keeps: it is the user's code (a call counter) and
    is not taken off."""
    original = getattr(fn, "_torchdynamo_orig_callable", None)
    if original is None or getattr(fn, "__wrapped__", original) is not original:
        return None
    return original


def eager_of(fn: Any) -> Any:
    """What ``fn`` runs without torch.compile: the function a ``@torch.compile`` decorator
    wrapped, an ``OptimizedModule``'s module, else ``fn``. A target may come compiled; its eager
    baseline must not be (nor pay a compile on each call after a reset)."""
    if isinstance(fn, torch._dynamo.eval_frame.OptimizedModule):
        return fn._orig_mod
    original = compiled_from(fn)
    return fn if original is None else original


def uncompiled(fn: Any) -> Any:
    """What calls ``fn`` as the user's code runs without the target's own compile:
    ``eager_of(fn)``, and for a module compiled as a whole (its ``compile()``, a
    ``@torch.compile`` on its ``forward``, a compiled ``forward`` set on the instance), its
    hooks and ``forward`` uncompiled. A compile within it (a submodule or helper the user
    compiles) is the user's code, as they run it, and stays."""
    inner = eager_of(fn)
    if not isinstance(inner, nn.Module):
        return inner
    own = inner.__dict__.get("forward")
    forward = compiled_from(own if own is not None else type(inner).forward)
    if forward is None and getattr(inner, "_compiled_call_impl", None) is None:
        return inner
    if forward is not None and own is None:  # the class's compiled forward, bound
        forward = types.MethodType(forward, inner)

    def call(*args: Any, **kwargs: Any) -> Any:
        if forward is None:  # compile(): the module's call, hooks and all, not its compile
            return inner._call_impl(*args, **kwargs)
        inner.__dict__["forward"] = forward  # what ``_call_impl`` calls, for this call
        try:
            return inner._call_impl(*args, **kwargs)
        finally:
            if own is None:
                del inner.__dict__["forward"]
            else:
                inner.__dict__["forward"] = own

    return call


def _target_location(fn: Any) -> tuple[str, int]:
    obj = type(fn) if isinstance(fn, nn.Module) else inspect.unwrap(fn)
    try:
        path = inspect.getsourcefile(obj) or ""
        line = inspect.getsourcelines(obj)[1]
        return str(Path(path).resolve()), max(line, 1)
    except (TypeError, OSError):
        return "", 1


def _describe(fn: Any) -> str:
    if isinstance(fn, nn.Module):
        return type(fn).__name__
    return getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))


def _identity(fn: Any) -> tuple[int, ...]:
    """What makes two calls variants of one target. ``m.generate`` builds a new bound method
    on every access, so a list of ``(m.generate, args)`` holds distinct objects that torch
    compiles as one function of one model: key those on the model and the function."""
    if isinstance(fn, types.MethodType):
        return (id(fn.__self__), id(fn.__func__))
    return (id(fn),)


def seed() -> None:
    """The random state an example starts from, the same every time: an example that draws
    its inputs without seeding gives the same inputs on every analysis (the same findings, and
    the same target keys: worker/targetkeys.py). An example that seeds itself still decides."""
    random.seed(0)
    torch.manual_seed(0)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(0)


def targets_of(unit: Unit, module: types.ModuleType) -> list[Target]:
    obj = getattr(module, unit.attr)
    seed()
    if unit.kind == "guess" or (unit.kind == "config" and isinstance(obj, type)):
        return [_guess_target(unit, obj)]
    result = obj()
    items = result if isinstance(result, list) else [result]
    if not items:
        raise ExampleError(f"{unit.attr}() returned an empty list")
    groups: dict[tuple[int, ...], tuple[Any, list[Call]]] = {}
    where: dict[tuple[int, ...], list[int]] = {}
    for i, item in enumerate(items):
        fn, call = _as_call(item, f"{unit.attr}()" + (f"[{i}]" if len(items) > 1 else ""))
        groups.setdefault(_identity(fn), (fn, []))[1].append(call)
        where.setdefault(_identity(fn), []).append(i)
    targets = []
    site = (unit.path, call_site_line(unit.path, unit.line), unit.attr)
    top = top_level_tensors(module)
    for i, (key, (fn, calls)) in enumerate(groups.items()):
        own = [items[j] for j in where[key]]
        others = reached_elsewhere(items, where[key], top)
        markable = markable_args(own, others)
        name = TargetId("", unit.name, None if len(groups) == 1 else i).short
        path, line = _target_location(fn)
        targets.append(
            Target(
                name=name,
                fn=fn,
                calls=calls,
                path=path or unit.path,
                line=line if path else unit.line,
                kind=unit.kind,
                call_site=site,
                positions=tuple(where[key]) if isinstance(result, list) else None,
                markable=markable,
                scalars=scalar_args(own),
                varying=varying_dims(own, markable),
                nested=nested_paths(own, others),
            )
        )
    return targets


def _first_leaf(module: nn.Module) -> nn.Module | None:
    for m in module.modules():
        if not list(m.children()) and m is not module:
            return m
    return None


def guess_inputs(model: nn.Module) -> tuple[tuple[Any, ...], str]:
    """Inputs for an argument-free module, inferred from its first layer."""
    leaf = _first_leaf(model)
    batch = 2
    if isinstance(leaf, nn.Linear):
        return (torch.randn(batch, leaf.in_features),), f"Linear(in_features={leaf.in_features})"
    if isinstance(leaf, (nn.Conv1d, nn.Conv2d, nn.Conv3d)):
        spatial = {nn.Conv1d: 1, nn.Conv2d: 2, nn.Conv3d: 3}[type(leaf)]
        size = (batch, leaf.in_channels, *([16] * spatial))
        return (torch.randn(*size),), f"{type(leaf).__name__}(in_channels={leaf.in_channels})"
    if isinstance(leaf, nn.Embedding):
        ids = torch.randint(0, leaf.num_embeddings, (batch, 16))
        return (ids,), f"Embedding(num_embeddings={leaf.num_embeddings})"
    if isinstance(leaf, (nn.LSTM, nn.GRU, nn.RNN)):
        shape = (batch, 8, leaf.input_size) if leaf.batch_first else (8, batch, leaf.input_size)
        return (torch.randn(*shape),), f"{type(leaf).__name__}(input_size={leaf.input_size})"
    if isinstance(leaf, nn.LayerNorm):
        return (torch.randn(batch, 8, *leaf.normalized_shape),), "LayerNorm"
    if isinstance(leaf, nn.BatchNorm1d):
        return (torch.randn(batch, leaf.num_features),), "BatchNorm1d"
    if isinstance(leaf, nn.BatchNorm2d):
        return (torch.randn(batch, leaf.num_features, 16, 16),), "BatchNorm2d"
    raise ExampleError(
        f"cannot guess inputs for {type(model).__name__}: its first layer is "
        f"{type(leaf).__name__ if leaf is not None else 'missing'}; "
        "add a compile_example() function that returns (model, args)"
    )


def _guess_target(unit: Unit, cls: type) -> Target:
    model = cls()
    args, _ = guess_inputs(model)
    return Target(
        name=unit.name,
        fn=model,
        calls=[Call(args, {})],
        path=unit.path,
        line=unit.line,
        kind=unit.kind,
        guess=True,
        call_site=(unit.path, unit.line, unit.attr),
    )


def code_of(fn: Any) -> tuple[str, int] | None:
    """The target's own code as torch's metrics name a frame: (file, first line)."""
    call = fn.forward if isinstance(fn, torch.nn.Module) else fn
    code = getattr(inspect.unwrap(getattr(call, "__func__", call)), "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code is not None else None


def _parameters(fn: Any) -> list[inspect.Parameter]:
    """The target's own parameters, through wrappers (``functools.wraps``) and modules."""
    call = fn.forward if isinstance(fn, torch.nn.Module) else fn
    try:
        return list(inspect.signature(call).parameters.values())
    except (TypeError, ValueError):
        return []


def parameter_names(fn: Any) -> list[str]:
    """The target's positional parameter names, in order."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in _parameters(fn) if p.kind in kinds]


def keyword_only_names(fn: Any) -> frozenset[str]:
    """The target's keyword-only parameters (after ``*``)."""
    return frozenset(p.name for p in _parameters(fn) if p.kind is p.KEYWORD_ONLY)
