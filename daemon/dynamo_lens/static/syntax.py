"""Small readings of the syntax tree that the walker and the checks share: what an annotation
says about a value, a class statement's header, a qualified name's short form, dtype arguments,
expressions that visibly make integer tensors."""

from __future__ import annotations

import ast
import re

from .model import SCALAR, SEQ, TENSOR, UNKNOWN, V, dotted
from .torch_api import INT_PRODUCERS, SCALAR_ANN, SHAPE_ONLY, TENSOR_ANN

TRY_STMTS: tuple[type[ast.stmt], ...] = (
    ast.Try,
    *([ast.TryStar] if hasattr(ast, "TryStar") else []),
)

# `.name =`, `.name +=`, ... but not `.name ==`.
ATTR_STORE = re.compile(r"\.([A-Za-z_]\w*)\s*(?:\*\*|//|>>|<<|[-+*/%&|^@])?=(?!=)")

_DTYPES = frozenset(
    [
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
    ]
)


def ann_value(ann: ast.expr | None) -> V | None:
    """The value an annotation promises (None: no annotation)."""
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


def callee(e: ast.expr) -> ast.expr:
    return e.func if isinstance(e, ast.Call) else e


def header(s: ast.ClassDef) -> ast.AST:
    """The `class Name` part of a class statement, for a one-line range."""
    node = ast.Name(id=s.name)
    node.lineno = node.end_lineno = s.lineno
    node.col_offset = s.col_offset
    node.end_col_offset = s.col_offset + len("class ") + len(s.name)
    return node


def short(q: str) -> str:
    """A qualified name as users write it: ``F.relu``, ``np.save``."""
    for long, brief in (
        ("torch.nn.functional.", "F."),
        ("numpy.", "np."),
        ("datetime.datetime.", "datetime."),
    ):
        if q.startswith(long):
            return brief + q[len(long) :]
    return q


def is_str_expr(e: ast.expr) -> bool:
    return (isinstance(e, ast.Constant) and isinstance(e.value, str)) or isinstance(
        e, ast.JoinedStr
    )


def is_dtype_like(q: str) -> bool:
    return q.rsplit(".", 1)[-1] in _DTYPES


def bool_dtype(e: ast.Call) -> bool:
    """Whether the call names ``dtype=torch.bool`` (or passes it positionally)."""
    for k in e.keywords:
        if k.arg == "dtype":
            d = dotted(k.value) or ""
            return d.endswith(".bool")
    for a in e.args:
        d = dotted(a) or ""
        if d.endswith(".bool"):
            return True
    return False


def int_tensor_expr(e: ast.expr) -> bool:
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
            return name in SHAPE_ONLY and int_tensor_expr(f.value)
    return isinstance(e, ast.Attribute) and e.attr == "indices"
