"""Static rules on calls into the file's own code: ``self.layer(...)``, ``self.method()``, module
functions, and what they reach.
"""

from __future__ import annotations

import ast

from . import model as m
from .api import (
    RNN_LAYERS,
)
from .model import (
    SCALAR,
    SEQ,
    TENSOR,
    UNKNOWN,
    ClassInfo,
    FuncInfo,
    K,
    V,
    join,
)
from .walker import WalkerCore


class ModuleCallChecks(WalkerCore):
    def reach(
        self, fi: FuncInfo, e: ast.AST, args: list[V], kwargs: dict[str, V], bound_self: bool
    ) -> V:
        """Record a call into a same-file function; returns its value as known so far."""
        if self.quiet or self.fi is None:
            return UNKNOWN
        if fi.disabled:
            self.hit("compiler-disabled-call", e, "call", name=fi.name)
            return UNKNOWN
        closure: dict[str, V] = {}
        if fi.parent is not None and fi.parent is self.fi:
            closure = {k: v for k, v in self.env.items() if v.k != K.UNKNOWN}
        return self.an.on_call(self.fi, fi, args, kwargs, e, bound_self, closure)

    def _self_class(self, v: V) -> ClassInfo | None:
        for qn in v.classes:
            ci = self.an.class_by_qual.get(qn)
            if ci is not None:
                return ci
        return None

    def _classes(self, v: V) -> list[ClassInfo]:
        return [c for qn in sorted(v.classes) if (c := self.an.class_by_qual.get(qn)) is not None]

    def call_module(self, e: ast.Call, v: V, args: list[V], kwargs: dict[str, V]) -> V:
        rnn = sorted(c for c in v.classes if c.rsplit(".", 1)[-1] in RNN_LAYERS)
        if rnn and rnn[0].startswith("torch.nn."):
            self.hit("rnn", e, "module", name=rnn[0].rsplit(".", 1)[-1])
            return SEQ
        out: V | None = None
        for ci in self._classes(v):
            fwd = self.ix.method(ci, "forward")
            if fwd is not None:
                r = self.reach(fwd, e, args, kwargs, bound_self=True)
                out = join(out, r if r.k != K.UNKNOWN else TENSOR)
        return out if out is not None else TENSOR

    def local_call(self, e: ast.Call, name: str, args: list[V], kwargs: dict[str, V]) -> V:
        v = self.env.get(name)
        if v is None and name not in self.locals:
            v = self.an.globals.get(name)
        if v is not None and v.k == K.MODULE:
            return self.call_module(e, v, args, kwargs)
        fi = self.an._lookup_func(name, self.fi) if self.fi is not None else None
        if fi is None and name in self.ix.functions:
            fi = self.ix.functions[name]
        if fi is not None and (v is None or v.k == K.UNKNOWN):
            return self.reach(fi, e, args, kwargs, bound_self=False)
        if name in self.ix.classes and name not in self.env:
            ci = self.ix.classes[name]
            if ci.is_module:
                if not self.quiet and self.an.creates_params(ci):
                    self.hit("module-construction", e, "class", name=name)
                return m.module_of(frozenset({ci.qualname}))
            init = self.ix.method(ci, "__init__")
            if init is not None:
                self.reach(init, e, args, kwargs, bound_self=True)
            return V(K.SELF, frozenset({ci.qualname}))
        if v is not None and v.k == K.SELF:
            obj_cls = self._self_class(v)
            call = self.ix.method(obj_cls, "__call__") if obj_cls else None
            if call is not None:
                return self.reach(call, e, args, kwargs, bound_self=True)
        return UNKNOWN

    def self_method(
        self,
        e: ast.Call,
        func: ast.Attribute,
        recv: V,
        name: str,
        args: list[V],
        kwargs: dict[str, V],
    ) -> V:
        if "<super>" in recv.classes:
            # super().forward(x): look the method up in the enclosing class's bases.
            ci = self.fi.cls if self.fi is not None else None
            if ci is None:
                return UNKNOWN
            for c in self.ix.mro(ci)[1:]:
                fi = c.methods.get(name)
                if fi is not None:
                    return self.reach(fi, e, args, kwargs, bound_self=True)
            return UNKNOWN
        ci = self._self_class(recv)
        if ci is None:
            return UNKNOWN
        fi = self.ix.method(ci, name)
        if fi is not None:
            return self.reach(fi, e, args, kwargs, bound_self=fi.kind != "staticmethod")
        attr = self.ix.class_attr(ci, name)
        if attr is not None and attr.k == K.MODULE:
            return self.call_module(e, attr, args, kwargs)
        if attr is not None and attr.k == K.LOGGER:
            return SCALAR
        if attr is not None and attr.k == K.UNKNOWN and ci.is_module:
            # A layer built in __init__ from something defined elsewhere (an imported block,
            # a factory): calling it inside forward gives a tensor.
            return TENSOR
        if name == "register_buffer" and len(e.args) >= 2:
            return SCALAR
        return UNKNOWN
