"""Static rules on ``torch.*`` functions and ``nn`` constructors."""

from __future__ import annotations

import ast

from . import model as m
from .api import (
    CONTAINERS,
    DYNAMIC_SHAPE_FNS,
    PACK_FNS,
    PARAM_LAYERS,
    TENSOR_NS,
    TORCH_BOOL,
    TORCH_DATA_BOOL,
    TORCH_NON_TENSOR,
    TORCH_SEQ,
)
from .model import (
    BOOL,
    INDEX0,
    SCALAR,
    SEQ,
    TENSOR,
    UNKNOWN,
    FuncInfo,
    K,
    V,
)
from .state import (
    _bool_dtype,
    _short,
)
from .walker import WalkerCore


class TorchChecks(WalkerCore):
    def torch_call(self, e: ast.Call, q: str, args: list[V], kwargs: dict[str, V]) -> V:
        ns, _, fn = q.rpartition(".")
        if q == "torch._dynamo.graph_break":
            self.hit("explicit-graph-break", e)
            return SCALAR
        if q in ("torch.compiler.disable", "torch._dynamo.disable"):
            return UNKNOWN
        if q in (
            "torch.manual_seed",
            "torch.seed",
            "torch.random.manual_seed",
            "torch.random.seed",
        ):
            self.hit("python-random", e, "call", name=q)
            return UNKNOWN
        if q in ("torch.cuda.manual_seed", "torch.cuda.manual_seed_all"):
            self.hit("python-random", e, "call", name=q)
            return UNKNOWN
        if q in ("torch.save", "torch.load"):
            self.hit("file-io", e, "skipped", name=q)
            return UNKNOWN
        if q == "torch.autograd.grad":
            self.hit("autograd-grad", e)
            return SEQ
        if q == "torch.utils.checkpoint.checkpoint" and e.args:
            target = e.args[0]
            fi = self._func_ref(target)
            if fi is not None:
                return self.reach(fi, e, args[1:], {}, bound_self=True)
            return TENSOR
        if ns == "torch.nn":
            if fn in ("Parameter", "Buffer"):
                self.hit("module-construction", e, "nn-created", name=fn)
                return TENSOR
            if fn in PARAM_LAYERS:
                self.hit("module-construction", e, "nn-constructed", name=fn)
            if fn in CONTAINERS:
                return m.module_of(self._module_classes_in(e))
            return m.module_of(frozenset({q})) if fn[:1].isupper() else UNKNOWN
        if q in PACK_FNS:
            self.hit("rnn", e, "functional", name=_short(q))
            return UNKNOWN
        if ns not in TENSOR_NS:
            return TENSOR if ns == "torch.utils.checkpoint" else UNKNOWN
        if fn.startswith("_"):
            return UNKNOWN  # private ops: return types vary (bools, tuples, handles)
        # torch.<op>, F.<op>, torch.linalg.<op>, ...
        if fn in TORCH_DATA_BOOL:
            self.hit("data-dependent-bool-op", e, "torch-fn", name=_short(q))
            return SCALAR
        if fn in DYNAMIC_SHAPE_FNS and not self.an.flags.capture_dynamic_output_shape_ops:
            self.hit("dynamic-shape-op", e, "torch-fn", name=_short(q))
        if fn == "where" and len(e.args) == 1 and not e.keywords:
            if not self.an.flags.capture_dynamic_output_shape_ops:
                self.hit("dynamic-shape-op", e, "where")
            return SEQ
        if fn == "repeat_interleave" and not self.an.flags.capture_dynamic_output_shape_ops:
            reps = args[1] if len(args) > 1 else kwargs.get("repeats")
            if (len(args) == 1 and args[0].tensor and not kwargs) or (
                reps is not None and reps.tensor
            ):
                self.hit("dynamic-shape-op", e, "repeat-interleave")
        if fn == "one_hot" and ns == "torch.nn.functional":
            if len(e.args) < 2 and not any(k.arg == "num_classes" for k in e.keywords):
                self.hit("one-hot-no-num-classes", e)
            return TENSOR
        if fn in TORCH_NON_TENSOR or (
            fn.startswith(("is_", "get_", "set_")) and fn != "is_nonzero"
        ):
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
        if fn in ("zeros", "ones", "empty", "full", "tensor", "as_tensor", "rand") and _bool_dtype(
            e
        ):
            return BOOL
        if fn[:1].isupper():
            return UNKNOWN  # classes: torch.Size, torch.Generator, ...
        return TENSOR

    def _module_classes_in(self, e: ast.Call) -> frozenset[str]:
        out: set[str] = set()
        for n in ast.walk(e):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                ci = self.ix.classes.get(n.func.id)
                if ci is not None and ci.is_module:
                    out.add(ci.qualname)
        return frozenset(out)

    def _func_ref(self, e: ast.expr) -> FuncInfo | None:
        if isinstance(e, ast.Name) and e.id not in self.env:
            return self.an._lookup_func(e.id, self.fi)
        if isinstance(e, ast.Attribute):
            v = self.peek(e.value)
            if v.k in (K.SELF, K.MODULE):
                for ci in self._classes(v):
                    fi = self.ix.method(ci, e.attr)
                    if fi is not None:
                        return fi
        return None
