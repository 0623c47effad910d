"""The static analysis's data: rule hits, targets, per-function state, file flags, and the
small value helpers the analyzer and the walker share.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from .api import (
    INT_PRODUCERS,
    SCALAR_ANN,
    SHAPE_ONLY,
    TENSOR_ANN,
)
from .model import (
    SCALAR,
    SEQ,
    TENSOR,
    UNKNOWN,
    FuncInfo,
    K,
    V,
    dotted,
    join,
)
from .rules import Rule

_MAX_RUNS = 6  # re-analyses per function before the worklist stops refining it

_MAX_DEPTH = 40  # call-chain depth analysed depth-first before falling back to the queue

# Set on hints inside for/while bodies.
_LOOP_NOTE = (
    " Inside a loop, a graph break makes Dynamo skip the whole function (GB7000), so none of "
    "it is compiled."
)


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
class _State:
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
class _Flags:
    """Dynamo config the file itself sets (module level), which turns some rules off."""

    capture_scalar_outputs: bool = False
    capture_dynamic_output_shape_ops: bool = False
    reorderable: set[str] = field(default_factory=set)


def _ann_value(ann: ast.expr | None) -> V | None:
    if ann is None:
        return None
    names: set[str] = set()
    stack: list[ast.expr] = [ann]
    while stack:  # annotations are small: Name, Attribute, Subscript, BinOp (X | None), str
        n = stack.pop()
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Attribute):
            names.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            names.update(n.value.replace("[", " ").replace("]", " ").replace(".", " ").split())
        elif isinstance(n, ast.Constant) and n.value is None:
            names.add("None")
        elif isinstance(n, ast.Subscript):
            stack += (n.value, n.slice)
        elif isinstance(n, ast.BinOp):
            stack += (n.left, n.right)
        elif isinstance(n, (ast.Tuple, ast.List)):
            stack += n.elts
    if names & TENSOR_ANN:
        if names & {"list", "List", "tuple", "Tuple", "Sequence", "Iterable", "dict", "Dict"}:
            return SEQ
        return TENSOR
    if names and names <= SCALAR_ANN:
        return SCALAR
    return UNKNOWN


def _param_defaults(fi: FuncInfo, entry: bool) -> dict[str, V]:
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
        ann = _ann_value(arg.annotation)
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


def _bind(fi: FuncInfo, args: list[V], kwargs: dict[str, V], bound_self: bool) -> dict[str, V]:
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


def _tensor_helper(fi: FuncInfo) -> bool:
    """A module-level function taking annotated tensors and returning tensors (not a host-side
    metric such as `-> float`, nor a training/eval loop by its name)."""
    if fi.node.name.startswith(("_", *_HOST_SIDE_NAMES)):
        return False
    ret = _ann_value(fi.node.returns)
    if ret is not None and not (ret.tensor or ret.k == K.SEQ):
        return False
    a = fi.node.args
    return any(
        (v := _ann_value(p.annotation)) is not None and v.tensor
        for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)
    )


def _is_forward(fi: FuncInfo) -> bool:
    return fi.name == "forward" and fi.cls is not None and fi.cls.is_module


def _join_params(a: dict[str, V], b: dict[str, V]) -> dict[str, V]:
    keys = a.keys() | b.keys()
    return {k: join(a.get(k), b.get(k)) if k in a and k in b else a.get(k) or b[k] for k in keys}


class _NoConst:
    pass


_NO_CONST = _NoConst()


def _join_env(a: dict[str, V], b: dict[str, V]) -> dict[str, V]:
    out = dict(a)
    for k, v in b.items():
        out[k] = join(a[k], v) if k in a else v
    return out


_TRY_STMTS: tuple[type[ast.stmt], ...] = (
    ast.Try,
    *([ast.TryStar] if hasattr(ast, "TryStar") else []),
)


def _callee(e: ast.expr) -> ast.expr:
    return e.func if isinstance(e, ast.Call) else e


def _header(s: ast.ClassDef) -> ast.AST:
    """The `class Name` part of a class statement, for a one-line range."""
    node = ast.Name(id=s.name)
    node.lineno = node.end_lineno = s.lineno
    node.col_offset = s.col_offset
    node.end_col_offset = s.col_offset + len("class ") + len(s.name)
    return node


def _short(q: str) -> str:
    for long, short in (
        ("torch.nn.functional.", "F."),
        ("numpy.", "np."),
        ("datetime.datetime.", "datetime."),
    ):
        if q.startswith(long):
            return short + q[len(long) :]
    return q


def _is_str_expr(e: ast.expr) -> bool:
    return (isinstance(e, ast.Constant) and isinstance(e.value, str)) or isinstance(
        e, ast.JoinedStr
    )


def _is_dtype_like(q: str) -> bool:
    last = q.rsplit(".", 1)[-1]
    return last in {
        "float",
        "float16",
        "float32",
        "float64",
        "bfloat16",
        "half",
        "double",
        "int",
        "int8",
        "int16",
        "int32",
        "int64",
        "long",
        "uint8",
        "bool",
        "complex64",
        "complex128",
        "strided",
        "channels_last",
        "contiguous_format",
        "preserve_format",
    }


def _bool_dtype(e: ast.Call) -> bool:
    for k in e.keywords:
        if k.arg == "dtype":
            d = dotted(k.value) or ""
            return d.endswith(".bool")
    for a in e.args:
        d = dotted(a) or ""
        if d.endswith(".bool"):
            return True
    return False


def _int_tensor_expr(e: ast.expr) -> bool:
    """Whether the expression visibly produces an integer tensor (x.long(), argmax, ...)."""
    if isinstance(e, ast.Call):
        f = e.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name in INT_PRODUCERS:
            return True
        if name == "to":
            return any(
                (dotted(a) or "").endswith(("long", "int64", "int32", "int")) for a in e.args
            )
        if isinstance(f, ast.Attribute):
            return name in SHAPE_ONLY and _int_tensor_expr(f.value)
    return isinstance(e, ast.Attribute) and e.attr == "indices"


# `.name =`, `.name +=`, ... but not `.name ==`.
_ATTR_STORE = re.compile(r"\.([A-Za-z_]\w*)\s*(?:\*\*|//|>>|<<|[-+*/%&|^@])?=(?!=)")
