"""Static rules on method calls by receiver: tensor methods (item, tolist, backward, ...),
loggers and NumPy values.
"""

from __future__ import annotations

import ast

from .api import (
    DYNAMIC_SHAPE_FNS,
    LOG_METHODS,
    METHOD_BOOL,
    METHOD_SCALAR,
    METHOD_SEQ,
)
from .model import (
    BOOL,
    INDEX0,
    NDARRAY,
    SCALAR,
    SEQ,
    TENSOR,
    UNKNOWN,
    K,
    V,
)
from .state import (
    _bool_dtype,
    _int_tensor_expr,
)
from .walker import WalkerCore


class MethodChecks(WalkerCore):
    def method_call(
        self, e: ast.Call, func: ast.Attribute, recv: V, args: list[V], kwargs: dict[str, V]
    ) -> V:
        name = func.attr
        if recv.k == K.SELF:
            return self.self_method(e, func, recv, name, args, kwargs)
        if recv.k == K.MODULE:
            if name in ("forward", "__call__"):
                return self.call_module(e, recv, args, kwargs)
            for ci in self._classes(recv):
                fi = self.ix.method(ci, name)
                if fi is not None:
                    return self.reach(fi, e, args, kwargs, bound_self=True)
            return UNKNOWN
        if recv.k == K.LOGGER:
            if name in LOG_METHODS and not any(
                d.endswith(f".{name}") for d in self.an.flags.reorderable
            ):
                self.hit("logger-call", e, "logger", name=name)
            return SCALAR
        if recv.k == K.FILE:
            return UNKNOWN  # open() was already flagged
        if recv.k == K.NDARRAY:
            if name in ("item", "tolist"):
                self.hit(
                    "numpy-to-python", e, "tolist" if name == "tolist" else "method", name=name
                )
                return SCALAR
            return NDARRAY
        if recv.tensor or recv.k == K.UNKNOWN:
            return self.tensor_method(e, func, recv, name, args, kwargs)
        if recv.k == K.SEQ and name in ("index", "count"):
            return SCALAR
        return UNKNOWN

    def tensor_method(
        self,
        e: ast.Call,
        func: ast.Attribute,
        recv: V,
        name: str,
        args: list[V],
        kwargs: dict[str, V],
    ) -> V:
        known = recv.tensor
        flags = self.an.flags
        if name == "item" and not e.args:
            if not flags.capture_scalar_outputs:
                self.hit("tensor-item", e)
            return SCALAR
        if name == "tolist" and not e.args:
            if not flags.capture_scalar_outputs or not _int_tensor_expr(func.value):
                kind = "int" if _int_tensor_expr(func.value) else "float"
                self.hit("tensor-tolist", e, kind)
            return SCALAR
        if name == "backward" and (known or isinstance(func.value, ast.Name)):
            self.hit("tensor-backward", e)
            return SCALAR
        if not known:
            # Unknown receivers: only names that are tensor methods and nothing else.
            if name in ("numpy",):
                return UNKNOWN
            if name in METHOD_SEQ or name in METHOD_SCALAR:
                return UNKNOWN
            return UNKNOWN
        if name in ("equal", "allclose", "is_nonzero"):
            self.hit("data-dependent-bool-op", e, "tensor-method", name=name)
            return SCALAR
        if name in DYNAMIC_SHAPE_FNS and not flags.capture_dynamic_output_shape_ops:
            self.hit("dynamic-shape-op", e, "tensor-method", name=name)
            if any(k.arg in ("as_tuple", "return_inverse", "return_counts") for k in e.keywords):
                return SEQ
            return TENSOR
        if name == "repeat_interleave" and args and args[0].tensor:
            if not flags.capture_dynamic_output_shape_ops:
                self.hit("dynamic-shape-op", e, "repeat-interleave")
            return TENSOR
        if name in ("resize_", "resize_as_"):
            self.hit("tensor-meta-mutation", e, "resize" if name == "resize_" else "set", name=name)
            return TENSOR
        if name == "requires_grad_":
            self.hit("tensor-meta-mutation", e, "requires-grad-method")
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
        if name == "to" and _bool_dtype(e):
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
