"""The walker: evaluates one function body in order, the way Dynamo would trace it.

It tracks what each name holds (``model.V``), follows calls into the file's own functions
(through the ``Program`` it is part of), and at every place where Dynamo may break reports an
event (``events.py``) to the rules registered for it (``checks/``). It decides nothing about
graph breaks itself; it records the hits the rules make and whether Dynamo would give up on the
rest of the frame.
"""

from __future__ import annotations

import ast
from typing import cast

from . import calls
from . import checks as _checks  # noqa: F401  (importing it registers every rule)
from . import model as m
from .events import (
    ATTRIBUTE_STORE,
    BUILTIN,
    CLASS_STATEMENT,
    CONDITION,
    CONTAINS,
    NOT,
    PERCENT_FORMAT,
    SUBSCRIPT,
    Check,
    dispatch,
    listeners,
)
from .model import BOOL, NDARRAY, SCALAR, SEQ, TENSOR, UNKNOWN, FuncInfo, K, V, join, unpack
from .rules import RULES
from .state import NO_CONST, Flags, Hit, Program, join_env
from .syntax import TRY_STMTS, ann_value, callee, header, is_dtype_like, is_str_expr
from .torch_api import ATTR_SCALAR, ATTR_TENSOR, COMPILING_FALSE, COMPILING_TRUE


class Walker:
    def __init__(
        self,
        an: Program,
        fi: FuncInfo | None,
        params: dict[str, V],
        closure: dict[str, V],
        quiet: bool,
    ) -> None:
        self.an = an
        self.ix = an.ix
        self.flags: Flags = an.flags
        self.fi = fi
        self.quiet = quiet
        self.env: dict[str, V] = {**closure, **params}
        self.local_aliases: dict[str, str] = {}
        self.hits: list[Hit] = []
        self._hit_keys: set[tuple[int, str]] = set()
        self.returns: list[V] = []
        self.loop = 0  # depth of for/while bodies (comprehensions are frames of their own)
        self.skipping = 0  # depth of try bodies and non-torch `with` blocks
        # Set once a hit makes Dynamo give up on the rest of this frame (a break in a loop or
        # try body, or one it cannot resume from): later code runs eagerly, so no more hits.
        self.skipped = False
        # self.<attr> assignments seen (for __init__): value and constant (if a literal)
        self.self_stores: dict[str, tuple[V, object]] = {}
        self.locals: set[str] = set(params) | set(closure)
        if fi is not None:
            self.locals |= fi.locals

    @property
    def ret(self) -> V | None:
        out: V | None = None
        for v in self.returns:
            out = join(out, v)
        return out

    def run(self) -> None:
        assert self.fi is not None
        self.body(self.fi.node.body)

    # ---- events and hits --------------------------------------------------------------------
    def emit(self, event: str, node: ast.AST, key: str | None = None, **facts: object) -> None:
        """Report ``event`` at ``node`` to the rules that listen to it."""
        if self.quiet or self.skipped:
            return  # nothing a rule says would be recorded
        found = listeners(event, key)
        if found:
            dispatch(Check(self.hit, self.flags, node, **facts), found)  # type: ignore[arg-type]

    def hit(
        self,
        rule_id: str,
        node: ast.AST,
        variant: str | None = None,
        *,
        resumable: bool = True,
        gb: str | None = None,
        **fields: str,
    ) -> None:
        """Record a rule hit: ``variant`` names the form (rules.py), ``fields`` fill its message,
        ``gb`` is an id looked up in one of torch_api.py's tables ("" for none there)."""
        if self.quiet or self.skipped:
            return
        key = (id(node), rule_id)
        if key in self._hit_keys:
            return
        self._hit_keys.add(key)
        rule = RULES[rule_id]
        what: str | None = None
        gb_id = gb
        if variant is not None:
            form = rule.variants[variant]
            what = form.what.format(**fields) or None
            if gb_id is None:
                gb_id = form.gb_id if form.gb_id is not None else ""
        self.hits.append(Hit(rule, node, what, gb_id, self.loop > 0))
        if self.loop or self.skipping or not resumable:
            self.skipped = True

    # ---- statements -------------------------------------------------------------------------
    def body(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            v = self.expr(s.value)
            for t in s.targets:
                self.bind(t, v, s.value)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                v = self.expr(s.value)
                ann = ann_value(s.annotation)
                self.bind(s.target, v if v.k != K.UNKNOWN or ann is None else ann, s.value)
        elif isinstance(s, ast.AugAssign):
            v = self.binop(s.op, self.expr(s.target, store=True), self.expr(s.value))
            self.bind(s.target, v, None)
        elif isinstance(s, ast.Expr):
            self.expr(s.value)
        elif isinstance(s, ast.Return):
            self.returns.append(self.expr(s.value) if s.value is not None else SCALAR)
        elif isinstance(s, ast.If):
            truth = self.truth(s.test)
            if truth is None:
                self.cond(s.test)
            self.branches(
                [s.body] if truth is True else [s.orelse] if truth is False else [s.body, s.orelse]
            )
        elif isinstance(s, ast.While):
            self.cond(s.test)
            self.loop_body(s.body)
            self.body(s.orelse)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            it = self.iter_value(s.iter)
            self.loop += 1
            before = dict(self.env)
            for _ in range(2):  # twice: values assigned late in the body flow to the top
                self.bind(s.target, it, None)
                self.body(s.body)
            self.loop -= 1
            self.env = join_env(before, self.env)
            self.body(s.orelse)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            traced = True
            for item in s.items:
                v = self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, v, None)
                q = self.qualify(callee(item.context_expr)) or ""
                traced = traced and q.startswith(("torch.", "contextlib.nullcontext"))
            # Dynamo resumes after a break inside torch's own context managers (no_grad,
            # autocast, ...) but not inside others.
            self.skipping += 0 if traced else 1
            self.body(s.body)
            self.skipping -= 0 if traced else 1
        elif isinstance(s, TRY_STMTS):
            tr = cast(ast.Try, s)  # TryStar has the same fields
            self.skipping += 1  # a break inside try makes Dynamo skip the frame (verified)
            self.body(tr.body)
            self.skipping -= 1
            for h in tr.handlers:
                if h.name:
                    self.env[h.name] = UNKNOWN
                self.body(h.body)
            self.body(tr.orelse)
            self.body(tr.finalbody)
        elif isinstance(s, ast.Assert):
            # Dynamo turns `assert tensor_cond[, "text"]` into a runtime assert; only a
            # non-constant message makes it fall back to a Python jump (verified, GB0170).
            if s.msg is not None and not isinstance(s.msg, ast.Constant):
                self.cond(s.test)
            else:
                self.expr(s.test)
            if s.msg is not None:
                self.expr(s.msg)
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            m.import_aliases(s, self.local_aliases)
            for a in s.names:
                self.env.pop((a.asname or a.name).split(".")[0], None)
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in s.decorator_list:
                self.expr(d)
            self.env[s.name] = UNKNOWN
        elif isinstance(s, ast.ClassDef):
            self.emit(CLASS_STATEMENT, header(s), name=s.name)
            self.env[s.name] = UNKNOWN
        elif isinstance(s, ast.Raise):
            if s.exc is not None:
                self.expr(s.exc)
        elif isinstance(s, ast.Delete):
            for t in s.targets:
                if isinstance(t, ast.Name):
                    self.env.pop(t.id, None)
        elif isinstance(s, ast.Match):
            self.expr(s.subject)
            self.branches([c.body for c in s.cases] + [[]])

    def branches(self, bodies: list[list[ast.stmt]]) -> None:
        before = self.env
        skipped_before = self.skipped
        results: list[dict[str, V]] = []
        skips: list[bool] = []
        for b in bodies:
            self.env = dict(before)
            self.skipped = skipped_before
            self.body(b)
            results.append(self.env)
            skips.append(self.skipped)
        self.skipped = all(skips) if skips else skipped_before
        env = results[0] if results else before
        for r in results[1:]:
            env = join_env(env, r)
        self.env = env

    def loop_body(self, body: list[ast.stmt]) -> None:
        self.loop += 1
        before = dict(self.env)
        self.body(body)
        self.body(body)
        self.loop -= 1
        self.env = join_env(before, self.env)

    def bind(self, t: ast.expr, v: V, value: ast.expr | None) -> None:
        if isinstance(t, ast.Name):
            self.env[t.id] = v
        elif isinstance(t, (ast.Tuple, ast.List)):
            n = len(t.elts)
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == n:
                vals = [self.peek(e) for e in value.elts]
            else:
                vals = unpack(v, n)
            for el, ev in zip(t.elts, vals, strict=True):
                if isinstance(el, ast.Starred):
                    self.bind(el.value, SEQ if ev.tensor else UNKNOWN, None)
                else:
                    self.bind(el, ev, None)
        elif isinstance(t, ast.Attribute):
            recv = self.expr(t.value)
            if recv.k == K.SELF:
                const = value.value if isinstance(value, ast.Constant) else NO_CONST
                self.self_stores[t.attr] = (v, const)
            else:
                self.emit(ATTRIBUTE_STORE, t, t.attr, name=t.attr, recv=recv)
        elif isinstance(t, ast.Subscript):
            # x[mask] = v is an index_put: fine for Dynamo, so no dynamic-shape check here.
            self.expr(t.value)
            self.expr(t.slice)
        elif isinstance(t, ast.Starred):
            self.bind(t.value, v, None)

    def peek(self, e: ast.expr) -> V:
        """The value of an expression already walked (a tuple's parts), without new hits."""
        quiet, self.quiet = self.quiet, True
        try:
            return self.expr(e)
        finally:
            self.quiet = quiet

    # ---- conditions -------------------------------------------------------------------------
    def truth(self, e: ast.expr) -> bool | None:
        """Statically known truth of a condition Dynamo would constant-fold."""
        if isinstance(e, ast.Constant):
            return bool(e.value)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            t = self.truth(e.operand)
            return None if t is None else not t
        if isinstance(e, ast.BoolOp):
            vals = [self.truth(v) for v in e.values]
            if isinstance(e.op, ast.And):
                if any(v is False for v in vals):
                    return False
                return True if all(v is True for v in vals) else None
            if any(v is True for v in vals):
                return True
            return False if all(v is False for v in vals) else None
        if isinstance(e, ast.Name) and e.id not in self.locals:
            if e.id == "TYPE_CHECKING":
                return False
            if e.id in self.ix.global_consts:
                return bool(self.ix.global_consts[e.id])
            return None
        if isinstance(e, ast.Call) and not e.args:
            q = self.qualify(e.func)
            if q in COMPILING_TRUE:
                return True
            if q in COMPILING_FALSE:
                return False
            return None
        if (
            isinstance(e, ast.Attribute)
            and isinstance(e.value, ast.Name)
            and e.value.id == "self"
            and self.fi is not None
            and self.fi.cls is not None
        ):
            ok, val = self.ix.class_const(self.fi.cls, e.attr)
            return bool(val) if ok else None
        return None

    def cond(self, e: ast.expr) -> None:
        """A condition Python evaluates with bool(): a tensor here is a data-dependent jump."""
        if isinstance(e, ast.BoolOp):
            for operand in e.values:
                self.cond(operand)
            return
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            self.cond(e.operand)
            return
        self.emit(CONDITION, e, value=self.expr(e))

    # ---- expressions ------------------------------------------------------------------------
    def qualify(self, node: ast.expr) -> str | None:
        """The imported name an attribute chain refers to (None for locals: ``self.fc``)."""
        root = node
        while type(root) is ast.Attribute:
            root = root.value
        if type(root) is not ast.Name:
            return None
        rid = root.id
        if rid not in self.local_aliases and (rid in self.env or rid in self.locals):
            return None  # decided before building any dotted string
        return self.ix.qualify(node, self.local_aliases)

    def expr(self, e: ast.expr, store: bool = False) -> V:
        t = type(e)  # exact-type checks first: the four most common nodes, cheaply
        if t is ast.Name:
            return self.name(e)  # type: ignore[arg-type]
        if t is ast.Constant:
            return SCALAR
        if t is ast.Call:
            return self.call(e)  # type: ignore[arg-type]
        if t is ast.Attribute:
            return self.attribute(e)  # type: ignore[arg-type]
        if isinstance(e, ast.Subscript):
            return self.subscript(e, store)
        if isinstance(e, ast.BinOp):
            left = self.expr(e.left)
            right = self.expr(e.right)
            if isinstance(e.op, ast.Mod) and is_str_expr(e.left):
                if not self.quiet:
                    parts = e.right.elts if isinstance(e.right, ast.Tuple) else [e.right]
                    self.emit(PERCENT_FORMAT, e, args=[self.peek(p) for p in parts])
                return SCALAR
            return self.binop(e.op, left, right)
        if isinstance(e, ast.Compare):
            vals = [self.expr(e.left)] + [self.expr(c) for c in e.comparators]
            for op, right in zip(e.ops, vals[1:], strict=True):
                if isinstance(op, (ast.In, ast.NotIn)):
                    self.emit(CONTAINS, e, value=right)
            if all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in e.ops):
                return SCALAR
            if any(v.tensor for v in vals):
                return BOOL
            if any(v.k == K.NDARRAY for v in vals):
                return NDARRAY
            if all(v.k == K.SCALAR for v in vals):
                return SCALAR
            return UNKNOWN
        if isinstance(e, ast.BoolOp):
            # Every operand but the last is tested with bool(); the last is the value.
            for v in e.values[:-1]:
                self.cond(v)
            return self.expr(e.values[-1])
        if isinstance(e, ast.UnaryOp):
            val = self.expr(e.operand)
            if isinstance(e.op, ast.Not):
                self.emit(NOT, e, value=val)
                return SCALAR
            if isinstance(e.op, ast.Invert) and val.k == K.BOOL:
                return BOOL
            return val if val.tensor or val.k in (K.SCALAR, K.NDARRAY) else UNKNOWN
        if isinstance(e, ast.IfExp):
            truth = self.truth(e.test)
            if truth is None:
                self.cond(e.test)
                return join(self.expr(e.body), self.expr(e.orelse))
            return self.expr(e.body if truth else e.orelse)
        if isinstance(e, (ast.Tuple, ast.List)):
            return m.tup([self.expr(el) for el in e.elts])
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.comprehension(e.generators, [e.elt], seq=True)
        if isinstance(e, ast.DictComp):
            self.comprehension(e.generators, [e.key, e.value], seq=False)
            return UNKNOWN
        if isinstance(e, ast.Dict):
            for k in e.keys:
                if k is not None:
                    self.expr(k)
            for v in e.values:
                self.expr(v)
            return UNKNOWN
        if isinstance(e, ast.Set):
            for el in e.elts:
                self.expr(el)
            return SCALAR
        if isinstance(e, ast.JoinedStr):
            # f-strings of tensors are traced (verified), so only walk their parts.
            for part in e.values:
                self.expr(part)
            return SCALAR
        if isinstance(e, ast.FormattedValue):
            self.expr(e.value)
            if e.format_spec is not None:
                self.expr(e.format_spec)
            return SCALAR
        if isinstance(e, ast.Starred):
            return self.expr(e.value)
        if isinstance(e, ast.NamedExpr):
            named = self.expr(e.value)
            self.env[e.target.id] = named
            return named
        if isinstance(e, ast.Lambda):
            saved = dict(self.env)
            for a in (*e.args.posonlyargs, *e.args.args, *e.args.kwonlyargs):
                self.env[a.arg] = UNKNOWN
            self.expr(e.body)
            self.env = saved
            return UNKNOWN
        if isinstance(e, ast.Slice):
            for bound in (e.lower, e.upper, e.step):
                if bound is not None:
                    self.expr(bound)
            return SCALAR
        if isinstance(e, (ast.Await, ast.Yield, ast.YieldFrom)):
            if e.value is not None:
                self.expr(e.value)
            return UNKNOWN
        return UNKNOWN

    def name(self, e: ast.Name) -> V:
        v = self.env.get(e.id)
        if v is not None:
            return v
        if e.id in self.locals:
            return UNKNOWN
        g = self.an.globals.get(e.id)
        if g is not None:
            return g
        return UNKNOWN

    @staticmethod
    def binop(op: ast.operator, a: V, b: V) -> V:
        if a.tensor or b.tensor:
            if isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)) and (
                a.k == K.BOOL or b.k == K.BOOL
            ):
                return BOOL
            return TENSOR
        if a.k == K.NDARRAY or b.k == K.NDARRAY:
            return NDARRAY
        if a.k == K.SCALAR and b.k == K.SCALAR:
            return SCALAR
        if a.k == K.TUPLE and b.k == K.TUPLE and isinstance(op, ast.Add):
            return m.tup([*a.elts, *b.elts])
        return UNKNOWN

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
                self.emit(BUILTIN, it, "range", name="range", args=[self.expr(a) for a in it.args])
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
            return SCALAR if q.startswith("torch.") and is_dtype_like(q) else UNKNOWN
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
            ci = calls.self_class(self.an, recv)
            if ci is not None:
                v = self.ix.class_attr(ci, e.attr)
                if v is not None:
                    return v
            return UNKNOWN
        if recv.k == K.MODULE:
            if e.attr in ("weight", "bias"):
                return TENSOR
            for ci in calls.classes(self.an, recv):
                v = self.ix.class_attr(ci, e.attr)
                if v is not None:
                    return v
            return UNKNOWN
        return UNKNOWN

    def subscript(self, e: ast.Subscript, store: bool) -> V:
        v = self.expr(e.value)
        idx = self.expr(e.slice)
        self.emit(SUBSCRIPT, e, recv=v, value=idx, extra={"store": store})
        if v.tensor:
            parts = idx.elts if idx.k == K.TUPLE else (idx,)
            if not store and any(p.k in (K.BOOL, K.INDEX0) for p in parts):
                return TENSOR
            return BOOL if v.k == K.BOOL else TENSOR  # a slice of a mask is still a mask
        if v.k == K.TUPLE:
            if idx.tensor and not store:  # a Python list indexed by a tensor reads its value
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
            return SCALAR
        return UNKNOWN

    def call(self, e: ast.Call) -> V:
        return calls.evaluate(self, e)
