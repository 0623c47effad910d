"""Static rules on attribute access, subscripts and iteration: tensor attributes, indexing
by tensors or masks, iterating over tensors."""

from __future__ import annotations

import ast

from . import model as m
from .api import (
    ATTR_SCALAR,
    ATTR_TENSOR,
)
from .model import (
    BOOL,
    SCALAR,
    SEQ,
    TENSOR,
    UNKNOWN,
    K,
    V,
)
from .state import (
    _is_dtype_like,
)
from .walker import WalkerCore


class AccessChecks(WalkerCore):
    def comprehension(self, gens: list[ast.comprehension], elts: list[ast.expr], seq: bool) -> V:
        # In Python 3.11 a comprehension is a nested function: Dynamo breaks at the call and
        # resumes after it, so it does not count as a loop here.
        saved = dict(self.env)
        for g in gens:
            self.bind(g.target, self.iter_value(g.iter), None)
            for cond in g.ifs:
                self.cond(cond)
        vals = [self.expr(el) for el in elts]
        self.env = saved
        if seq and vals and vals[0].tensor:
            return SEQ
        if seq and vals and vals[0].k == K.MODULE:
            return vals[0]
        return UNKNOWN

    def iter_value(self, it: ast.expr) -> V:
        """The value of each item when iterating over ``it``."""
        if (
            isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id not in self.locals
        ):
            fn = it.func.id
            if fn == "range":
                for a in it.args:
                    if self.expr(a).tensor:
                        self.hit("tensor-to-python-scalar", it, "range")
                return SCALAR
            if fn == "enumerate" and it.args:
                return m.tup([SCALAR, self.iter_value(it.args[0])])
            if fn == "zip":
                return m.tup([self.iter_value(a) for a in it.args])
            if fn == "reversed" and it.args:
                return self.iter_value(it.args[0])
        v = self.expr(it)
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute):
            if it.func.attr in ("items",):
                return m.tup([SCALAR, UNKNOWN])
            if it.func.attr in ("tolist",):
                return SCALAR
        return m.element(v)

    def attribute(self, e: ast.Attribute) -> V:
        q = self.qualify(e)
        if q is not None:
            return SCALAR if q.startswith("torch.") and _is_dtype_like(q) else UNKNOWN
        recv = self.expr(e.value)
        if recv.tensor:
            if e.attr in ATTR_SCALAR:
                return SCALAR
            if e.attr in ATTR_TENSOR:
                return TENSOR
            return UNKNOWN
        if recv.k == K.SEQ and e.attr in ("values", "indices"):
            return TENSOR
        if recv.k == K.SELF:
            if e.attr == "training":
                return SCALAR
            ci = self._self_class(recv)
            if ci is not None:
                v = self.ix.class_attr(ci, e.attr)
                if v is not None:
                    return v
            return UNKNOWN
        if recv.k == K.MODULE:
            if e.attr in ("weight", "bias"):
                return TENSOR
            for ci in self._classes(recv):
                v = self.ix.class_attr(ci, e.attr)
                if v is not None:
                    return v
            return UNKNOWN
        return UNKNOWN

    def subscript(self, e: ast.Subscript, store: bool) -> V:
        v = self.expr(e.value)
        idx = self.expr(e.slice)
        if v.tensor:
            parts = idx.elts if idx.k == K.TUPLE else (idx,)
            if not store and any(p.k == K.BOOL for p in parts):
                self.hit("dynamic-shape-op", e, "bool-mask")
                return TENSOR
            if not store and any(p.k == K.INDEX0 for p in parts):
                self.hit("tensor-to-python-scalar", e, "index-0d")
                return TENSOR
            return BOOL if v.k == K.BOOL else TENSOR  # a slice of a mask is still a mask
        if v.k == K.TUPLE:
            if idx.tensor and not store:  # a Python list indexed by a tensor reads its value
                self.hit("tensor-to-python-scalar", e, "seq-index")
                return m.element(v)
            if isinstance(e.slice, ast.Constant) and isinstance(e.slice.value, int):
                i = e.slice.value
                if -len(v.elts) <= i < len(v.elts):
                    return v.elts[i]
                return UNKNOWN
            if isinstance(e.slice, ast.Slice):
                return v
            return m.element(v)
        if v.k in (K.SEQ, K.MODULE):
            return m.element(v) if not isinstance(e.slice, ast.Slice) else v
        if v.k == K.SCALAR:
            if idx.tensor:  # a Python list indexed by a tensor reads its value
                self.hit("tensor-to-python-scalar", e, "seq-index")
            return SCALAR
        return UNKNOWN
