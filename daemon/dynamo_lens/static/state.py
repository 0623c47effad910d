"""The static analysis's data: rule hits, targets, per-function state, the Dynamo settings a
file sets itself, how values bind to parameters, and what a walk needs from the analysis it is
part of (``Program``)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Protocol

from .model import (
    SCALAR,
    SEQ,
    TENSOR,
    UNKNOWN,
    ClassInfo,
    FuncInfo,
    K,
    ModuleIndex,
    V,
    join,
)
from .rules import Rule
from .syntax import ann_value

MAX_RUNS = 6  # re-analyses per function before the worklist stops refining it

MAX_DEPTH = 40  # call-chain depth analysed depth-first before falling back to the queue

# Set on hints inside for/while bodies.
LOOP_NOTE = (
    " Inside a loop, a graph break makes Dynamo skip the whole function (GB7000), so none of "
    "it is compiled."
)


class _NoConst:
    pass


NO_CONST = _NoConst()  # "not a literal": a self.<attr> store whose value is computed


@dataclass
class Hit:
    rule: Rule
    node: ast.AST
    what: str | None = None  # message detail replacing the rule's default
    gb: str | None = None  # overrides the rule's GB id when set
    in_loop: bool = False


@dataclass
class Target:
    name: str
    entry: FuncInfo
    params: dict[str, V] | None = None  # from compile_example's arguments
    guess: bool = False


@dataclass
class FuncState:
    """What the worklist knows of one function: the values it is called with, the targets that
    reach it, its hits and return value, who calls it."""

    params: dict[str, V] = field(default_factory=dict)
    closure: dict[str, V] = field(default_factory=dict)
    targets: list[str] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    ret: V | None = None
    via: tuple[FuncInfo, ast.AST] | None = None
    callers: set[int] = field(default_factory=set)
    runs: int = 0
    entry: bool = False
    pending: bool = False  # queued for (re-)analysis


@dataclass
class Flags:
    """Dynamo config the file itself sets (module level), which turns some rules off."""

    capture_scalar_outputs: bool = False
    capture_dynamic_output_shape_ops: bool = False
    reorderable: set[str] = field(default_factory=set)


class Program(Protocol):
    """What a walk of one function asks of the whole analysis: the module's index and
    globals, the file's flags, and the calls into other functions of the file."""

    ix: ModuleIndex
    globals: dict[str, V]
    flags: Flags
    class_by_qual: dict[str, ClassInfo]

    def lookup_func(self, name: str, scope: FuncInfo | None) -> FuncInfo | None: ...

    def creates_params(self, ci: ClassInfo) -> bool: ...

    def on_call(
        self,
        caller: FuncInfo,
        callee: FuncInfo,
        args: list[V],
        kwargs: dict[str, V],
        node: ast.AST,
        bound_self: bool,
        closure: dict[str, V],
    ) -> V: ...


class Frame(Protocol):
    """One function being walked, as call evaluation (``calls.py``) sees it."""

    an: Program
    ix: ModuleIndex
    flags: Flags
    fi: FuncInfo | None
    env: dict[str, V]
    locals: set[str]
    quiet: bool
    skipped: bool

    def expr(self, e: ast.expr, store: bool = False) -> V: ...

    def peek(self, e: ast.expr) -> V: ...

    def qualify(self, node: ast.expr) -> str | None: ...

    def emit(self, event: str, node: ast.AST, key: str | None = None, **facts: object) -> None: ...


def param_defaults(fi: FuncInfo, entry: bool) -> dict[str, V]:
    """Values of parameters nobody passed: from annotations, constant defaults, or (for a
    compiled entry point such as forward) tensors."""
    a = fi.node.args
    out: dict[str, V] = {}
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults))
    defaults += list(a.defaults)
    pairs = list(zip(positional, defaults, strict=True))
    pairs += list(zip(a.kwonlyargs, a.kw_defaults, strict=True))
    for i, (arg, default) in enumerate(pairs):
        if i == 0 and fi.kind in ("method", "classmethod") and arg in positional:
            out[arg.arg] = V(K.SELF, frozenset({fi.cls.qualname})) if fi.cls else UNKNOWN
            continue
        ann = ann_value(arg.annotation)
        if ann is not None:
            out[arg.arg] = ann
        elif isinstance(default, ast.Constant):
            out[arg.arg] = SCALAR if default.value is not None else UNKNOWN
        elif default is not None:
            out[arg.arg] = UNKNOWN
        else:
            out[arg.arg] = TENSOR if entry else UNKNOWN
    if a.vararg:
        out[a.vararg.arg] = SEQ if entry and a.vararg.annotation is None else UNKNOWN
    if a.kwarg:
        out[a.kwarg.arg] = UNKNOWN
    return out


def bind(fi: FuncInfo, args: list[V], kwargs: dict[str, V], bound_self: bool) -> dict[str, V]:
    """The values a call passes, by ``fi``'s parameter names."""
    a = fi.node.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    if bound_self and fi.kind in ("method", "classmethod") and positional:
        positional = positional[1:]
    out: dict[str, V] = {}
    for name, v in zip(positional, args, strict=False):
        out[name] = v
    if len(args) > len(positional) and a.vararg:
        out[a.vararg.arg] = SEQ if all(v.tensor for v in args[len(positional) :]) else UNKNOWN
    for k, v in kwargs.items():
        if k in positional or k in {p.arg for p in a.kwonlyargs}:
            out[k] = v
    return out


_HOST_SIDE_NAMES = ("train", "eval", "evaluate", "validate", "test", "main", "fit", "log", "plot")


def tensor_helper(fi: FuncInfo) -> bool:
    """A module-level function taking annotated tensors and returning tensors (not a host-side
    metric such as `-> float`, nor a training/eval loop by its name)."""
    if fi.node.name.startswith(("_", *_HOST_SIDE_NAMES)):
        return False
    ret = ann_value(fi.node.returns)
    if ret is not None and not (ret.tensor or ret.k == K.SEQ):
        return False
    a = fi.node.args
    return any(
        (v := ann_value(p.annotation)) is not None and v.tensor
        for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)
    )


def is_forward(fi: FuncInfo) -> bool:
    return fi.name == "forward" and fi.cls is not None and fi.cls.is_module


def join_params(a: dict[str, V], b: dict[str, V]) -> dict[str, V]:
    keys = a.keys() | b.keys()
    return {k: join(a.get(k), b.get(k)) if k in a and k in b else a.get(k) or b[k] for k in keys}


def join_env(a: dict[str, V], b: dict[str, V]) -> dict[str, V]:
    out = dict(a)
    for k, v in b.items():
        out[k] = join(a[k], v) if k in a else v
    return out
