"""What a call returns, as far as the static analysis can tell: builtins, the standard library
and other imported modules, torch's functions and tensor methods. Pure: values in, a value out
(calls into the file's own code are ``calls.py``'s).

``stdlib_kind`` names what an imported (non-torch) function is (a clock, a logger, file I/O, a
library Dynamo cannot trace, ...): the walker reports the call under that kind, and the value
follows from it.
"""

from __future__ import annotations

import ast

from . import model as m
from .model import (
    BOOL,
    FILE,
    INDEX0,
    LOGGER,
    NDARRAY,
    SCALAR,
    SEQ,
    TENSOR,
    UNKNOWN,
    K,
    V,
    join,
)
from .syntax import bool_dtype
from .torch_api import (
    DYNAMIC_SHAPE_FNS,
    FRAME_FNS,
    IO_GB,
    LIBRARIES,
    LOG_METHODS,
    LOGGERISH,
    METHOD_BOOL,
    METHOD_SCALAR,
    METHOD_SEQ,
    OS_IO,
    PACK_FNS,
    TENSOR_NS,
    TORCH_BOOL,
    TORCH_DATA_BOOL,
    TORCH_NON_TENSOR,
    TORCH_SEQ,
    WALL_CLOCK,
)

SEED_FNS = frozenset(
    {
        "torch.manual_seed",
        "torch.seed",
        "torch.random.manual_seed",
        "torch.random.seed",
        "torch.cuda.manual_seed",
        "torch.cuda.manual_seed_all",
    }
)
CHECKPOINT = "torch.utils.checkpoint.checkpoint"


def builtin_value(fn: str, e: ast.Call, args: list[V]) -> V:
    a0 = args[0] if args else UNKNOWN
    if fn in ("print", "breakpoint", "range", "input"):
        return SCALAR
    if fn == "open":
        return FILE
    if fn in ("int", "float", "bool", "complex") and len(args) == 1:
        return SCALAR
    if fn in ("str", "repr") and len(args) == 1 and a0.tensor:
        return SCALAR
    if fn in ("len", "isinstance", "issubclass", "hasattr", "callable", "id", "type", "str"):
        return SCALAR
    if fn in ("list", "tuple", "sorted", "reversed"):
        if a0.tensor or a0.k == K.SEQ:
            return SEQ
        return a0 if a0.k in (K.TUPLE, K.MODULE) else UNKNOWN
    if fn in ("any", "all") and len(args) == 1 and a0.k == K.SEQ and e.args:
        return SCALAR
    if fn in ("sum", "max", "min", "abs", "round"):
        if fn in ("sum", "abs") and (a0.tensor or a0.k == K.SEQ):
            return TENSOR
        if fn in ("max", "min") and len(args) > 1:
            out: V | None = None
            for a in args:
                out = join(out, a)
            return out or UNKNOWN
        return SCALAR if a0.k == K.SCALAR else UNKNOWN
    if fn == "super":
        return V(K.SELF, frozenset({"<super>"}))
    return UNKNOWN


def library_of(q: str) -> str | None:
    """The library in ``LIBRARIES`` that ``q`` belongs to (the most specific listed first)."""
    return next((lib for lib in LIBRARIES if q == lib or q.startswith(lib + ".")), None)


def stdlib_kind(q: str) -> str:
    """What the imported function ``q`` (not torch's) is, in the order Dynamo's reasons go."""
    root, _, rest = q.partition(".")
    last = q.rsplit(".", 1)[-1]
    if root == "numpy":
        if rest.startswith("random."):
            return "numpy-random"
        return "numpy-io" if q in IO_GB else "numpy"
    if root == "time" and last in WALL_CLOCK:
        return "clock"
    if root == "datetime" and last in ("now", "utcnow", "today", "fromtimestamp"):
        return "datetime-now"
    if root == "random":
        return "random"
    if q == "warnings.warn":
        return "warn"
    if root == "logging":
        if last in LOG_METHODS and rest.count(".") == 0:
            return "logging-call"
        if last == "getLogger":
            return "get-logger"
    if q in ("pdb.set_trace", "ipdb.set_trace", "pudb.set_trace", "pdb.post_mortem"):
        return "debugger"
    if q in FRAME_FNS:
        return "frame"
    if q in IO_GB:
        return "io"
    if root == "os" and last in OS_IO:
        return "os-io"
    if root in ("subprocess", "shutil"):
        return root
    if q == "copy.deepcopy":
        return "deepcopy"
    if q == "math" or root == "math":
        return "math"
    if library_of(q) is not None:
        return "library"
    if (root == "functools" and last == "partial") or root == "torch_utils":
        return "opaque"
    # A logger object imported from elsewhere: recognisable by name only.
    parts = q.split(".")
    if len(parts) >= 2 and parts[-2] in LOGGERISH and last in LOG_METHODS:
        return "logger-method"
    return "other"


def stdlib_value(kind: str, args: list[V], kwargs: dict[str, V]) -> V:
    any_tensor = any(a.tensor for a in args) or any(v.tensor for v in kwargs.values())
    if kind == "numpy-random":
        return NDARRAY if any_tensor else UNKNOWN
    if kind == "numpy":
        if any_tensor or any(a.k == K.NDARRAY for a in args):
            return NDARRAY
        return SCALAR if all(a.k == K.SCALAR for a in args) else UNKNOWN
    if kind in ("clock", "random", "warn", "logging-call", "debugger", "math", "logger-method"):
        return SCALAR
    if kind == "get-logger":
        return LOGGER
    if kind == "deepcopy":
        return args[0] if args else UNKNOWN
    return UNKNOWN


def torch_value(q: str, e: ast.Call, args: list[V], kwargs: dict[str, V]) -> V:
    """The value of ``torch.<...>(...)``; ``torch.nn`` containers and checkpoint calls into
    the file's own code need the walker and are not asked here."""
    ns, _, fn = q.rpartition(".")
    if q == "torch._dynamo.graph_break":
        return SCALAR
    if q in ("torch.compiler.disable", "torch._dynamo.disable") or q in SEED_FNS:
        return UNKNOWN
    if q in ("torch.save", "torch.load"):
        return UNKNOWN
    if q == "torch.autograd.grad":
        return SEQ
    if ns == "torch.nn":
        if fn in ("Parameter", "Buffer"):
            return TENSOR
        return m.module_of(frozenset({q})) if fn[:1].isupper() else UNKNOWN
    if q in PACK_FNS:
        return UNKNOWN
    if ns not in TENSOR_NS:
        return TENSOR if ns == "torch.utils.checkpoint" else UNKNOWN
    if fn.startswith("_"):
        return UNKNOWN  # private ops: return types vary (bools, tuples, handles)
    # torch.<op>, F.<op>, torch.linalg.<op>, ...
    if fn in TORCH_DATA_BOOL:
        return SCALAR
    if fn == "where" and len(e.args) == 1 and not e.keywords:
        return SEQ
    if fn == "one_hot" and ns == "torch.nn.functional":
        return TENSOR
    if fn in TORCH_NON_TENSOR or (fn.startswith(("is_", "get_", "set_")) and fn != "is_nonzero"):
        return SCALAR
    if fn in TORCH_SEQ:
        return SEQ
    if fn in ("max", "min", "median") and (len(e.args) > 1 or e.keywords):
        if len(args) > 1 and args[1].tensor:
            return TENSOR
        return SEQ
    if fn in ("unique", "nonzero") and any(
        k.arg in ("return_inverse", "return_counts", "as_tuple") for k in e.keywords
    ):
        return SEQ
    if fn in TORCH_BOOL:
        return BOOL
    if fn in ("argmax", "argmin") and len(e.args) == 1 and not e.keywords:
        return INDEX0
    if fn in ("zeros", "ones", "empty", "full", "tensor", "as_tensor", "rand") and bool_dtype(e):
        return BOOL
    if fn[:1].isupper():
        return UNKNOWN  # classes: torch.Size, torch.Generator, ...
    return TENSOR


def tensor_method_value(name: str, e: ast.Call, recv: V, args: list[V], capture_dynamic: bool) -> V:
    """The value of ``x.name(...)`` where ``x`` is a tensor (or may be one: UNKNOWN);
    ``capture_dynamic``: the file sets ``capture_dynamic_output_shape_ops``."""
    known = recv.tensor
    func = e.func
    if name in ("item", "tolist") and not e.args:
        return SCALAR
    if name == "backward" and (known or (isinstance(func, ast.Attribute) and _named(func))):
        return SCALAR
    if not known:
        return UNKNOWN  # unknown receivers: nothing is assumed about the result
    if name in ("equal", "allclose", "is_nonzero"):
        return SCALAR
    if name in DYNAMIC_SHAPE_FNS and not capture_dynamic:
        if any(k.arg in ("as_tuple", "return_inverse", "return_counts") for k in e.keywords):
            return SEQ
        return TENSOR
    if name == "repeat_interleave" and args and args[0].tensor:
        return TENSOR
    if name in ("resize_", "resize_as_", "requires_grad_"):
        return TENSOR
    if name == "numpy":
        return NDARRAY
    if name in ("argmax", "argmin") and not e.args and not e.keywords:
        return INDEX0
    if name in ("max", "min", "median") and (e.args or e.keywords):
        return TENSOR if args and args[0].tensor else SEQ
    if name in METHOD_SCALAR:
        return SCALAR
    if name in METHOD_SEQ:
        return SEQ
    if name.startswith(("_", "is_", "has_", "get_")):
        return UNKNOWN  # private or query methods: not reliably tensors
    if name in METHOD_BOOL:
        return BOOL
    if name == "to" and bool_dtype(e):
        return BOOL
    if name in ("type",) and not e.args:
        return SCALAR
    if name in (
        "masked_fill",
        "masked_fill_",
        "where",
        "clone",
        "detach",
        "contiguous",
        "cpu",
        "cuda",
        "to",
    ):
        return BOOL if recv.k == K.BOOL and name != "where" else TENSOR
    return TENSOR


def _named(func: ast.Attribute) -> bool:
    """``name.backward()``: a plain variable, which in a training step is the loss."""
    return isinstance(func.value, ast.Name)
