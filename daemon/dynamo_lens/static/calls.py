"""How the walker evaluates a call: what is called (a builtin, an imported function, torch, a
method of a value, a function or class of this file, a module object), the event it reports
for the rules, and the value it returns. Calls into the file's own functions go through the
``Program`` (the worklist), which walks the callee with the values passed.
"""

from __future__ import annotations

import ast

from . import model as m
from .events import (
    BUILTIN,
    LOCAL_CLASS,
    LOCAL_FUNCTION,
    LOGGER_METHOD,
    MODULE_OBJECT,
    NDARRAY_METHOD,
    STDLIB,
    TENSOR_METHOD,
    TORCH,
)
from .model import NDARRAY, SCALAR, SEQ, TENSOR, UNKNOWN, ClassInfo, FuncInfo, K, V, join
from .returns import (
    CHECKPOINT,
    builtin_value,
    stdlib_kind,
    stdlib_value,
    tensor_method_value,
    torch_value,
)
from .state import Frame, Program
from .torch_api import CONTAINERS, RNN_LAYERS


def evaluate(w: Frame, e: ast.Call) -> V:
    func = e.func
    q = w.qualify(func)
    bare: str | None = None
    if (
        isinstance(func, ast.Name)
        and q is None
        and func.id not in w.locals
        and func.id not in w.env  # comprehension variables, walrus targets
        and func.id not in w.ix.functions
        and func.id not in w.ix.classes
        and func.id not in w.an.globals
    ):
        bare = func.id  # a builtin: print, open, int, ...
    recv: V | None = None
    obj: V | None = None
    if q is None and isinstance(func, ast.Attribute):
        recv = w.expr(func.value)
    elif q is None and not isinstance(func, ast.Name):
        obj = w.expr(func)  # self.layers[i](x), getattr(self, name)(x), ...
    args = [w.expr(a) for a in e.args]
    kwargs = {k.arg: w.expr(k.value) for k in e.keywords if k.arg is not None}
    for k in e.keywords:
        if k.arg is None:
            w.expr(k.value)
    if bare is not None:
        w.emit(BUILTIN, e, bare, name=bare, args=args)
        return builtin_value(bare, e, args)
    if q is not None:
        if q.partition(".")[0] == "torch":
            return _torch(w, e, q, args, kwargs)
        kind = stdlib_kind(q)
        w.emit(STDLIB, e, kind, name=q, args=args, kwargs=kwargs, extra={"kind": kind})
        return stdlib_value(kind, args, kwargs)
    if isinstance(func, ast.Attribute) and recv is not None:
        return _method(w, e, func.attr, recv, args, kwargs)
    if isinstance(func, ast.Name):
        return _local(w, e, func.id, args, kwargs)
    if obj is not None and obj.k == K.MODULE:
        return call_module(w, e, obj, args, kwargs)
    return UNKNOWN


def _torch(w: Frame, e: ast.Call, q: str, args: list[V], kwargs: dict[str, V]) -> V:
    w.emit(TORCH, e, name=q, args=args, kwargs=kwargs)
    if q == CHECKPOINT and e.args:
        fi = _func_ref(w, e.args[0])
        if fi is not None:
            return reach(w, fi, e, args[1:], {}, bound_self=True)
        return TENSOR
    ns, _, fn = q.rpartition(".")
    if ns == "torch.nn" and fn in CONTAINERS:
        return m.module_of(_module_classes_in(w, e))
    return torch_value(q, e, args, kwargs)


def _method(w: Frame, e: ast.Call, name: str, recv: V, args: list[V], kwargs: dict[str, V]) -> V:
    if recv.k == K.SELF:
        return _self_method(w, e, recv, name, args, kwargs)
    if recv.k == K.MODULE:
        if name in ("forward", "__call__"):
            return call_module(w, e, recv, args, kwargs)
        for ci in classes(w.an, recv):
            fi = w.ix.method(ci, name)
            if fi is not None:
                return reach(w, fi, e, args, kwargs, bound_self=True)
        return UNKNOWN
    if recv.k == K.LOGGER:
        w.emit(LOGGER_METHOD, e, name, name=name, recv=recv, args=args)
        return SCALAR
    if recv.k == K.FILE:
        return UNKNOWN  # open() was already flagged
    if recv.k == K.NDARRAY:
        if name in ("item", "tolist"):
            w.emit(NDARRAY_METHOD, e, name, name=name, recv=recv)
            return SCALAR
        return NDARRAY
    if recv.tensor or recv.k == K.UNKNOWN:
        w.emit(TENSOR_METHOD, e, name, name=name, recv=recv, args=args, kwargs=kwargs)
        capture = w.flags.capture_dynamic_output_shape_ops
        return tensor_method_value(name, e, recv, args, capture)
    if recv.k == K.SEQ and name in ("index", "count"):
        return SCALAR
    return UNKNOWN


# -- the file's own code ---------------------------------------------------------------------
def reach(
    w: Frame, fi: FuncInfo, e: ast.AST, args: list[V], kwargs: dict[str, V], bound_self: bool
) -> V:
    """A call into a same-file function: the worklist walks it with these values; its value
    as known so far."""
    if w.quiet or w.fi is None:
        return UNKNOWN
    if fi.disabled:
        w.emit(LOCAL_FUNCTION, e, name=fi.name, extra={"disabled": True})
        return UNKNOWN
    closure: dict[str, V] = {}
    if fi.parent is not None and fi.parent is w.fi:
        closure = {k: v for k, v in w.env.items() if v.k != K.UNKNOWN}
    return w.an.on_call(w.fi, fi, args, kwargs, e, bound_self, closure)


def self_class(an: Program, v: V) -> ClassInfo | None:
    for qn in v.classes:
        ci = an.class_by_qual.get(qn)
        if ci is not None:
            return ci
    return None


def classes(an: Program, v: V) -> list[ClassInfo]:
    return [c for qn in sorted(v.classes) if (c := an.class_by_qual.get(qn)) is not None]


def call_module(w: Frame, e: ast.Call, v: V, args: list[V], kwargs: dict[str, V]) -> V:
    rnn = sorted(c for c in v.classes if c.rsplit(".", 1)[-1] in RNN_LAYERS)
    if rnn and rnn[0].startswith("torch.nn."):
        w.emit(MODULE_OBJECT, e, name=rnn[0].rsplit(".", 1)[-1])
        return SEQ
    out: V | None = None
    for ci in classes(w.an, v):
        fwd = w.ix.method(ci, "forward")
        if fwd is not None:
            r = reach(w, fwd, e, args, kwargs, bound_self=True)
            out = join(out, r if r.k != K.UNKNOWN else TENSOR)
    return out if out is not None else TENSOR


def _local(w: Frame, e: ast.Call, name: str, args: list[V], kwargs: dict[str, V]) -> V:
    v = w.env.get(name)
    if v is None and name not in w.locals:
        v = w.an.globals.get(name)
    if v is not None and v.k == K.MODULE:
        return call_module(w, e, v, args, kwargs)
    fi = w.an.lookup_func(name, w.fi) if w.fi is not None else None
    if fi is None and name in w.ix.functions:
        fi = w.ix.functions[name]
    if fi is not None and (v is None or v.k == K.UNKNOWN):
        return reach(w, fi, e, args, kwargs, bound_self=False)
    if name in w.ix.classes and name not in w.env:
        ci = w.ix.classes[name]
        if ci.is_module:
            if not w.quiet and not w.skipped:
                builds = w.an.creates_params(ci)
                w.emit(LOCAL_CLASS, e, name=name, extra={"creates_params": builds})
            return m.module_of(frozenset({ci.qualname}))
        init = w.ix.method(ci, "__init__")
        if init is not None:
            reach(w, init, e, args, kwargs, bound_self=True)
        return V(K.SELF, frozenset({ci.qualname}))
    if v is not None and v.k == K.SELF:
        obj_cls = self_class(w.an, v)
        call = w.ix.method(obj_cls, "__call__") if obj_cls else None
        if call is not None:
            return reach(w, call, e, args, kwargs, bound_self=True)
    return UNKNOWN


def _self_method(
    w: Frame, e: ast.Call, recv: V, name: str, args: list[V], kwargs: dict[str, V]
) -> V:
    if "<super>" in recv.classes:
        # super().forward(x): look the method up in the enclosing class's bases.
        ci = w.fi.cls if w.fi is not None else None
        if ci is None:
            return UNKNOWN
        for c in w.ix.mro(ci)[1:]:
            fi = c.methods.get(name)
            if fi is not None:
                return reach(w, fi, e, args, kwargs, bound_self=True)
        return UNKNOWN
    ci = self_class(w.an, recv)
    if ci is None:
        return UNKNOWN
    fi = w.ix.method(ci, name)
    if fi is not None:
        return reach(w, fi, e, args, kwargs, bound_self=fi.kind != "staticmethod")
    attr = w.ix.class_attr(ci, name)
    if attr is not None and attr.k == K.MODULE:
        return call_module(w, e, attr, args, kwargs)
    if attr is not None and attr.k == K.LOGGER:
        return SCALAR
    if attr is not None and attr.k == K.UNKNOWN and ci.is_module:
        # A layer built in __init__ from something defined elsewhere (an imported block,
        # a factory): calling it inside forward gives a tensor.
        return TENSOR
    if name == "register_buffer" and len(e.args) >= 2:
        return SCALAR
    return UNKNOWN


def _func_ref(w: Frame, e: ast.expr) -> FuncInfo | None:
    """The file's function ``e`` names (``fn``, ``self.method``), for checkpoint calls."""
    if isinstance(e, ast.Name) and e.id not in w.env:
        return w.an.lookup_func(e.id, w.fi)
    if isinstance(e, ast.Attribute):
        v = w.peek(e.value)
        if v.k in (K.SELF, K.MODULE):
            for ci in classes(w.an, v):
                fi = w.ix.method(ci, e.attr)
                if fi is not None:
                    return fi
    return None


def _module_classes_in(w: Frame, e: ast.Call) -> frozenset[str]:
    out: set[str] = set()
    for n in ast.walk(e):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            ci = w.ix.classes.get(n.func.id)
            if ci is not None and ci.is_module:
                out.add(ci.qualname)
    return frozenset(out)
