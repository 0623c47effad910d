"""Static hints: likely graph breaks found from the source alone, without importing torch.

The analysis runs in three steps over one file's AST:

1. **Targets** (``Analyzer.discover``): what torch.compile would trace, as the worker does:
   functions decorated with ``@torch.compile``, callables passed to ``torch.compile(...)``, and
   what module-level ``compile_example*`` functions return (their arguments give the entry's
   parameter values). Where a file declares none: every nn.Module's ``forward`` (the daemon's
   zero-configuration guess) and module-level functions taking annotated tensors.
2. **Reachability and values** (``Analyzer.run``/``on_call``): from each target, calls that can
   be resolved in this file (``self.method()``, ``self.layer(...)``, ModuleList iteration,
   module functions, nested functions, ``checkpoint(fn, ...)``) are followed depth first,
   joining the values passed at each call site. Within a function, ``_Walker`` is a small
   abstract interpreter: which names hold tensors, bool masks, modules or Python values.
3. **Rules** (``_Walker.call`` and friends): constructs that break Dynamo's graph, checked only
   on reachable code and only where the values are known. A rule that cannot tell stays silent.
   Like Dynamo, the walk skips branches it can fold (``torch.compiler.is_compiling()``, module
   constants) and stops reporting in a function once a break there would make Dynamo skip the
   rest of the frame (inside a loop or ``try``, or at an ``in``/``not`` on a tensor).

The tables of torch API facts are in ``api.py``; the rule texts and GB ids in ``rules.py``.
"""

from __future__ import annotations

import ast
import gc
import logging
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from ..findings import Finding, Frame, Kind, Severity
from ..findings import gb_doc_url as doc_url
from . import model as m
from .api import (
    ATTR_SCALAR,
    ATTR_TENSOR,
    COMPILING_FALSE,
    COMPILING_TRUE,
    CONTAINERS,
    DYNAMIC_SHAPE_FNS,
    FRAME_FNS,
    INT_PRODUCERS,
    IO_GB,
    LIBRARIES,
    LOG_METHODS,
    LOGGERISH,
    METHOD_BOOL,
    METHOD_SCALAR,
    METHOD_SEQ,
    MODULE_CHAIN,
    NP_RANDOM_SIZE_POS,
    NP_RANDOM_TRACED,
    OS_IO,
    PACK_FNS,
    PARAM_LAYERS,
    RNN_LAYERS,
    SCALAR_ANN,
    SHAPE_ONLY,
    TENSOR_ANN,
    TENSOR_NS,
    TORCH_BOOL,
    TORCH_DATA_BOOL,
    TORCH_NON_TENSOR,
    TORCH_SEQ,
    WALL_CLOCK,
)
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
    ClassInfo,
    FuncInfo,
    K,
    ModuleIndex,
    V,
    dotted,
    join,
    unpack,
)
from .rules import RULES, Rule

_log = logging.getLogger(__name__)

_MAX_RUNS = 6  # re-analyses per function before the worklist stops refining it
_MAX_DEPTH = 40  # call-chain depth analysed depth-first before falling back to the queue

# Set on hints inside for/while bodies.
_LOOP_NOTE = (
    " Inside a loop, a graph break makes Dynamo skip the whole function (GB7000), so none of "
    "it is compiled."
)


# --------------------------------------------------------------------------------------------
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


# --------------------------------------------------------------------------------------------
class Analyzer:
    def __init__(self, source: str, path: str, tree: ast.Module) -> None:
        self.source = source
        self.path = path
        self.tree = tree
        self.lines = m.source_lines(source)
        self.ix = ModuleIndex(tree)
        self.class_by_qual = {c.qualname: c for c in self.ix.all_classes}
        self.guessed_targets: set[str] = set()  # zero-configuration guesses, not declared
        self.flags = _Flags()
        self.globals: dict[str, V] = {}
        self._defaults: dict[tuple[int, bool], dict[str, V]] = {}
        self._scan_module_config()
        self.states: dict[int, _State] = {}
        self.funcs: dict[int, FuncInfo] = {}
        self._creates_params: dict[str, bool] = {}
        self._stores: dict[str, int] | None = None
        # Module globals first (logger = logging.getLogger(...)); class attributes on demand.
        self.globals = self._module_globals()
        self.ix.load_attrs = self._load_class_attrs

    # ---- module-level facts -----------------------------------------------------------------
    def _scan_module_config(self) -> None:
        if "config" not in self.source:
            return  # no torch._dynamo.config settings here (the usual case)
        for stmt in self.tree.body:
            if isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    d = dotted(t) or ""
                    val = stmt.value
                    truthy = isinstance(val, ast.Constant) and bool(val.value)
                    if d.endswith("config.capture_scalar_outputs") and truthy:
                        self.flags.capture_scalar_outputs = True
                    if d.endswith("config.capture_dynamic_output_shape_ops") and truthy:
                        self.flags.capture_dynamic_output_shape_ops = True
            text_nodes = list(ast.walk(stmt)) if isinstance(stmt, (ast.Expr, ast.Assign)) else []
            attrs = {n.attr for n in text_nodes if isinstance(n, ast.Attribute)}
            if attrs & {
                "reorderable_logging_functions",
                "ignore_logger_methods",
                "ignore_logging_functions",
            }:
                for n in text_nodes:
                    d = (dotted(n) if isinstance(n, (ast.Name, ast.Attribute)) else None) or ""
                    if d in ("print", "warnings.warn") or d.split(".")[-1] in LOG_METHODS:
                        self.flags.reorderable.add(d)

    def param_defaults(self, fi: FuncInfo, entry: bool) -> dict[str, V]:
        """Memoised :func:`_param_defaults` (asked at every call site). Do not mutate."""
        key = (id(fi), entry)
        out = self._defaults.get(key)
        if out is None:
            out = self._defaults[key] = _param_defaults(fi, entry)
        return out

    def _attribute_stores(self) -> dict[str, int]:
        """How often each attribute name is assigned anywhere in the file (``x.name = ...``).

        A regex over the text, not a tree walk: this runs on every keystroke. Over-counting
        (a match in a string) only makes the constant-attribute folding more careful.
        """
        counts: dict[str, int] = {}
        for name in _ATTR_STORE.findall(self.source):
            counts[name] = counts.get(name, 0) + 1
        if "setattr(" in self.source:
            return {k: v + 99 for k, v in counts.items()} | {"": 99}
        return counts

    def _load_class_attrs(self, ci: ClassInfo) -> None:
        """What ``self.<name>`` holds in instances of ``ci``: from the class body and from a
        quiet walk of __init__ (and similar set-up methods)."""
        if self._stores is None:
            self._stores = self._attribute_stores()
        stores = self._stores
        for stmt in ci.node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                ci.attrs[stmt.target.id] = _ann_value(stmt.annotation) or UNKNOWN
            elif isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant):
                for t in stmt.targets:
                    if isinstance(t, ast.Name):
                        ci.attrs[t.id] = SCALAR
                        if stores.get(t.id, 0) == 0 and "" not in stores:
                            ci.const_attrs[t.id] = stmt.value.value
        for name in ("__init__", "__post_init__", "reset_parameters", "setup", "build"):
            fi = ci.methods.get(name)
            if fi is None:
                continue
            w = _Walker(self, fi, self.param_defaults(fi, entry=False), {}, quiet=True)
            w.run()
            for attr, (v, const) in w.self_stores.items():
                ci.attrs[attr] = join(ci.attrs.get(attr), v) if attr in ci.attrs else v
                if const is not _NO_CONST and stores.get(attr, 0) == 1 and "" not in stores:
                    ci.const_attrs[attr] = const

    def _module_globals(self) -> dict[str, V]:
        w = _Walker(self, None, {}, {}, quiet=True)
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                w.stmt(stmt)
        return w.env

    def creates_params(self, ci: ClassInfo) -> bool:
        if ci.qualname in self._creates_params:
            return self._creates_params[ci.qualname]
        self._creates_params[ci.qualname] = False  # recursion guard
        found = False
        for c in self.ix.mro(ci):
            init = c.methods.get("__init__")
            if init is None:
                continue
            for n in ast.walk(init.node):
                if not isinstance(n, ast.Call):
                    continue
                q = self.ix.qualify(n.func) or ""
                if q.startswith("torch.nn.") and q.rsplit(".", 1)[-1] in PARAM_LAYERS:
                    found = True
                elif isinstance(n.func, ast.Name) and n.func.id in self.ix.classes:
                    other = self.ix.classes[n.func.id]
                    found = other.is_module and self.creates_params(other)
                if found:
                    break
            if found:
                break
        self._creates_params[ci.qualname] = found
        return found

    # ---- targets ----------------------------------------------------------------------------
    def discover(self) -> list[Target]:
        out: list[Target] = []
        seen: set[tuple[str, int]] = set()

        def add(t: Target | None) -> None:
            if t is None:
                return
            key = (t.name, id(t.entry))
            if key in seen:
                for o in out:  # same target from several examples: join their argument values
                    if (o.name, id(o.entry)) == key and t.params is not None:
                        o.params = _join_params(o.params, t.params) if o.params else t.params
                return
            seen.add(key)
            out.append(t)

        for fi in self.ix.all_funcs:
            if fi.compiled:
                add(Target(fi.qualname, fi))
        for scope, call in self._compile_calls():
            if call.args:
                add(self._resolve_target(call.args[0], scope))
        for name, fi in self.ix.functions.items():
            if name == "compile_example" or name.startswith("compile_example_"):
                for t in self._example_targets(fi):
                    add(t)
        if not out:
            # Nothing declared here: guess like the daemon does (every module's forward), plus
            # tensor-typed helper functions, which other files' models call.
            for ci in self.ix.classes.values():
                fwd = self.ix.method(ci, "forward") if ci.is_module else None
                if fwd is not None:
                    add(Target(ci.qualname, fwd, guess=True))
            for name, fi in self.ix.functions.items():
                if _tensor_helper(fi):
                    add(Target(name, fi, guess=True))
        return out

    def _compile_calls(self) -> list[tuple[FuncInfo | None, ast.Call]]:
        """``torch.compile(...)`` calls with the function they appear in (None: module level)."""
        if "compile(" not in self.source:
            return []  # the common case, decided without walking the tree
        funcs = {id(fi.node): fi for fi in self.ix.all_funcs}
        out: list[tuple[FuncInfo | None, ast.Call]] = []
        stack: list[tuple[ast.AST, FuncInfo | None]] = [(self.tree, None)]
        while stack:
            node, scope = stack.pop()
            if isinstance(node, ast.Call) and self.ix.qualify(node.func) == "torch.compile":
                out.append((scope, node))
            inner = funcs.get(id(node), scope)
            stack.extend((c, inner) for c in ast.iter_child_nodes(node))
        return out

    def _assigned(self, name: str, scope: FuncInfo | None) -> ast.expr | None:
        if scope is not None and name in scope.assigns:
            return scope.assigns[name]
        return self.ix.global_nodes.get(name)

    def _resolve_target(self, e: ast.expr, scope: FuncInfo | None, depth: int = 0) -> Target | None:
        if depth > 8:
            return None
        if isinstance(e, ast.Call):
            q = self.ix.qualify(e.func) or ""
            if q in ("torch.compile", "functools.partial") and e.args:
                return self._resolve_target(e.args[0], scope, depth + 1)
            if isinstance(e.func, ast.Attribute) and e.func.attr in MODULE_CHAIN:
                return self._resolve_target(e.func.value, scope, depth + 1)
            if isinstance(e.func, ast.Name) and e.func.id in self.ix.classes:
                ci = self.ix.classes[e.func.id]
                entry = self.ix.method(ci, "forward" if ci.is_module else "__call__")
                return Target(ci.qualname, entry) if entry else None
            return None
        if isinstance(e, ast.Name):
            fi = self._lookup_func(e.id, scope)
            if fi is not None:
                return Target(fi.qualname, fi)
            value = self._assigned(e.id, scope)
            if value is not None and value is not e:
                return self._resolve_target(value, scope if scope else None, depth + 1)
            return None
        if isinstance(e, ast.Attribute):
            if isinstance(e.value, ast.Name) and e.value.id == "self" and scope and scope.cls:
                fi = self.ix.method(scope.cls, e.attr)
                return Target(fi.qualname, fi) if fi else None
            inner = self._resolve_target(e.value, scope, depth + 1)
            if inner is not None and inner.entry.cls is not None:
                fi = self.ix.method(inner.entry.cls, e.attr)
                if fi is not None:
                    return Target(fi.qualname, fi)
        return None

    def _lookup_func(self, name: str, scope: FuncInfo | None) -> FuncInfo | None:
        s = scope
        while s is not None:
            if name in s.nested:
                return s.nested[name]
            s = s.parent
        return self.ix.functions.get(name)

    def _example_targets(self, fi: FuncInfo) -> list[Target]:
        w = _Walker(self, fi, {}, {}, quiet=True)
        w.run()
        env = w.env
        calls: list[ast.expr] = []

        def expand(e: ast.expr, depth: int = 0) -> None:
            if depth > 4:
                return
            if isinstance(e, ast.Tuple):
                calls.append(e)
            elif isinstance(e, (ast.List, ast.Set)):
                for el in e.elts:
                    expand(el, depth + 1)
            elif isinstance(e, (ast.ListComp, ast.GeneratorExp)):
                expand(e.elt, depth + 1)
            elif isinstance(e, ast.Name):
                v = self._assigned(e.id, fi)
                if v is not None:
                    expand(v, depth + 1)
                for arg in fi.appends.get(e.id, ()):  # cases.append((model, args))
                    expand(arg, depth + 1)

        for ret in fi.returns:
            expand(ret)
        out: list[Target] = []
        for tup in calls:
            assert isinstance(tup, ast.Tuple)
            if len(tup.elts) < 2:
                continue
            t = self._resolve_target(tup.elts[0], fi)
            if t is None:
                continue
            args_e = tup.elts[1]
            kw_e = tup.elts[2] if len(tup.elts) > 2 else None
            qw = _Walker(self, fi, {}, {}, quiet=True)
            qw.env = dict(env)
            args_v = qw.expr(args_e)
            if args_v.k == K.TUPLE:
                args = list(args_v.elts)
                kwargs: dict[str, V] = {}
                if isinstance(kw_e, ast.Dict):
                    for k, v in zip(kw_e.keys, kw_e.values, strict=True):
                        if isinstance(k, ast.Constant) and isinstance(k.value, str):
                            kwargs[k.value] = qw.expr(v)
                t.params = _bind(t.entry, args, kwargs, bound_self=True)
            out.append(t)
        return out

    # ---- the worklist -----------------------------------------------------------------------
    def state(self, fi: FuncInfo) -> _State:
        st = self.states.get(id(fi))
        if st is None:
            st = self.states[id(fi)] = _State()
            self.funcs[id(fi)] = fi
        return st

    def run(self) -> list[Finding]:
        self._queue: deque[FuncInfo] = deque()
        self._active: set[int] = set()  # functions being walked right now (the DFS stack)
        for t in self.discover():
            if t.guess:
                self.guessed_targets.add(t.name)
            st = self.state(t.entry)
            st.entry = True
            base = dict(self.param_defaults(t.entry, entry=True))
            if t.params:
                base.update(t.params)
            st.params = _join_params(st.params, base) if st.params else base
            if t.name not in st.targets:
                st.targets.append(t.name)
            self._enqueue(t.entry)
        while self._queue:
            fi = self._queue.popleft()
            st = self.state(fi)
            if st.pending and st.runs < _MAX_RUNS:
                self._analyze(fi)
        return self._findings()

    def _enqueue(self, fi: FuncInfo) -> None:
        st = self.state(fi)
        if not st.pending:
            st.pending = True
            self._queue.append(fi)

    def _analyze(self, fi: FuncInfo) -> None:
        st = self.state(fi)
        st.runs += 1
        st.pending = False
        self._active.add(id(fi))
        try:
            w = _Walker(self, fi, st.params, st.closure, quiet=False)
            w.run()
        finally:
            self._active.discard(id(fi))
        st.hits = w.hits
        if w.ret != st.ret:
            st.ret = w.ret
            for cid in st.callers:  # they used the old return value
                if cid not in self._active:
                    self._enqueue(self.funcs[cid])

    def on_call(
        self,
        caller: FuncInfo,
        callee: FuncInfo,
        args: list[V],
        kwargs: dict[str, V],
        node: ast.AST,
        bound_self: bool,
        closure: dict[str, V],
    ) -> V:
        """A walk reached a call into ``callee``: join the values passed, and analyse the
        callee now (depth first) so that the caller sees its return value in the same pass."""
        st = self.state(caller)
        cst = self.state(callee)
        cst.callers.add(id(caller))
        base = self.param_defaults(callee, entry=cst.entry or _is_forward(callee))
        incoming = {**base, **_bind(callee, args, kwargs, bound_self)}
        first = cst.runs == 0 and not cst.pending
        if cst.entry:
            new = cst.params  # a target's own parameters stay as declared
        elif first and not cst.params:
            new = incoming
        else:
            new = _join_params(cst.params, incoming)
        changed = new != cst.params
        cst.params = new
        if closure:
            merged = _join_params(cst.closure, closure) if cst.closure else closure
            changed = changed or merged != cst.closure
            cst.closure = merged
        for tname in st.targets:
            if tname not in cst.targets:
                cst.targets.append(tname)
                changed = True
        if cst.via is None and not cst.entry:
            cst.via = (caller, node)
        if (first or changed) and cst.runs < _MAX_RUNS:
            if id(callee) not in self._active and len(self._active) < _MAX_DEPTH:
                self._analyze(callee)
            else:
                self._enqueue(callee)  # recursion, or a very deep chain: later
        return cst.ret if cst.ret is not None else UNKNOWN

    # ---- findings ---------------------------------------------------------------------------
    def _findings(self) -> list[Finding]:
        out: list[Finding] = []
        for fid, st in self.states.items():
            fi = self.funcs[fid]
            if not st.targets:
                continue
            chain = self._chain(fi)
            for h in st.hits:
                out.append(self._finding(h, fi, st, chain))
        out.sort(key=lambda f: (f.line, f.column, f.data.get("rule", "")))
        return out

    def _chain(self, fi: FuncInfo) -> list[Frame]:
        frames: list[Frame] = []
        seen: set[int] = set()
        cur: FuncInfo | None = fi
        while cur is not None and id(cur) not in seen:
            seen.add(id(cur))
            via = self.state(cur).via
            if via is None:
                break
            caller, node = via
            frames.append(self._frame(node, caller.qualname))
            cur = caller
        return list(reversed(frames))

    def _span(self, node: ast.AST) -> tuple[int, int, int, int]:
        line = getattr(node, "lineno", 1)
        end_line = getattr(node, "end_lineno", None) or line
        col = self._char_col(line, getattr(node, "col_offset", 0))
        end_raw = getattr(node, "end_col_offset", None)
        end_col = self._char_col(end_line, end_raw) if end_raw is not None else col + 1
        return line, col + 1, end_line, end_col + 1

    def _char_col(self, line: int, byte_col: int) -> int:
        # ast columns are UTF-8 byte offsets; findings count characters.
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def _frame(self, node: ast.AST, name: str) -> Frame:
        line, col, end_line, end_col = self._span(node)
        code = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        return Frame(self.path, line, name, col, end_line, end_col, code)

    def _finding(self, h: Hit, fi: FuncInfo, st: _State, chain: list[Frame]) -> Finding:
        rule = h.rule
        span = m.function_span(fi.node)
        gb = h.gb if h.gb is not None else rule.gb_id
        if gb == "":
            gb = None
        line, col, end_line, end_col = self._span(h.node)
        message = f"Likely graph break: {h.what}" if h.what else rule.message
        explanation = rule.explanation + (_LOOP_NOTE if h.in_loop else "")
        return Finding(
            kind=Kind.STATIC_HINT,
            severity=Severity.INFORMATION if rule.confidence == "high" else Severity.HINT,
            path=self.path,
            line=line,
            column=col,
            end_line=end_line,
            end_column=end_col,
            message=message,
            explanation=explanation,
            hints=[rule.hint],
            gb_id=gb,
            doc_url=doc_url(gb),
            stack=[*chain, self._frame(h.node, fi.qualname)],
            target=st.targets[0],
            data={
                "rule": rule.id,
                "likely": True,
                "function": fi.qualname,
                "target": st.targets[0],
                "targets": list(st.targets),
                "in_loop": h.in_loop,
                # Reached only from targets the daemon guesses (no compile_example/compile).
                "guessed_target": all(t in self.guessed_targets for t in st.targets),
                # The function's identity for the Reconciler (see reconcile.function_hashes).
                "function_start": span[0],
                "function_digest": m.text_digest(self.lines, *span),
            },
        )


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


# --------------------------------------------------------------------------------------------
class _Walker:
    """Walks one function body in order, tracking values and recording rule hits and calls."""

    def __init__(
        self,
        an: Analyzer,
        fi: FuncInfo | None,
        params: dict[str, V],
        closure: dict[str, V],
        quiet: bool,
    ) -> None:
        self.an = an
        self.ix = an.ix
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

    def hit(
        self,
        rule_id: str,
        node: ast.AST,
        what: str | None = None,
        gb: str | None = None,
        resumable: bool = True,
    ) -> None:
        if self.quiet or self.skipped:
            return
        key = (id(node), rule_id)
        if key in self._hit_keys:
            return
        self._hit_keys.add(key)
        self.hits.append(Hit(RULES[rule_id], node, what, gb, self.loop > 0))
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
                ann = _ann_value(s.annotation)
                self.bind(s.target, v if v.k != K.UNKNOWN or ann is None else ann, s.value)
        elif isinstance(s, ast.AugAssign):
            v = self.binop(s.op, self.expr(s.target, store=True), self.expr(s.value), s)
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
            self.env = _join_env(before, self.env)
            self.body(s.orelse)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            traced = True
            for item in s.items:
                v = self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, v, None)
                q = self.qualify(_callee(item.context_expr)) or ""
                traced = traced and q.startswith(("torch.", "contextlib.nullcontext"))
            # Dynamo resumes after a break inside torch's own context managers (no_grad,
            # autocast, ...) but not inside others.
            self.skipping += 0 if traced else 1
            self.body(s.body)
            self.skipping -= 0 if traced else 1
        elif isinstance(s, _TRY_STMTS):
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
            self.hit("class-definition", _header(s), f"class {s.name} defined inside compiled code")
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
            env = _join_env(env, r)
        self.env = env

    def loop_body(self, body: list[ast.stmt]) -> None:
        self.loop += 1
        before = dict(self.env)
        self.body(body)
        self.body(body)
        self.loop -= 1
        self.env = _join_env(before, self.env)

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
                const = value.value if isinstance(value, ast.Constant) else _NO_CONST
                self.self_stores[t.attr] = (v, const)
            elif recv.tensor and t.attr == "requires_grad":
                self.hit("tensor-meta-mutation", t, "setting Tensor.requires_grad", "GB0206")
            elif recv.tensor and t.attr == "data":
                self.hit("tensor-meta-mutation", t, "assigning Tensor.data", "GB0056")
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
        if self.expr(e).tensor:
            self.hit("data-dependent-branch", e)

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
            if isinstance(e.op, ast.Mod) and _is_str_expr(e.left):
                parts = e.right.elts if isinstance(e.right, ast.Tuple) else [e.right]
                if any(self.peek(p).tensor for p in parts):
                    self.hit("tensor-to-string", e, "%-formatting a tensor")
                return SCALAR
            return self.binop(e.op, left, right, e)
        if isinstance(e, ast.Compare):
            vals = [self.expr(e.left)] + [self.expr(c) for c in e.comparators]
            for op, right in zip(e.ops, vals[1:], strict=True):
                if isinstance(op, (ast.In, ast.NotIn)) and right.tensor:
                    # Tensor.__contains__ is (t == v).any().item(): a host read (GB0124).
                    self.hit("tensor-to-python-scalar", e, "`in` test on a tensor", resumable=False)
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
            last = self.expr(e.values[-1])
            return last
        if isinstance(e, ast.UnaryOp):
            val = self.expr(e.operand)
            if isinstance(e.op, ast.Not):
                if val.tensor:
                    self.hit(
                        "data-dependent-bool-op", e, "`not` applied to a tensor", resumable=False
                    )
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
            vals = [self.expr(el) for el in e.elts]
            return m.tup(vals)
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
                        self.hit("tensor-to-python-scalar", it, "range() over a tensor", "GB0059")
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

    def binop(self, op: ast.operator, a: V, b: V, node: ast.AST) -> V:
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
                self.hit("dynamic-shape-op", e, "boolean-mask indexing", "GB0036")
                return TENSOR
            if not store and any(p.k == K.INDEX0 for p in parts):
                self.hit(
                    "tensor-to-python-scalar", e, "indexing with a 0-d tensor (argmax())", "GB0033"
                )
                return TENSOR
            return BOOL if v.k == K.BOOL else TENSOR  # a slice of a mask is still a mask
        if v.k == K.TUPLE:
            if idx.tensor and not store:  # a Python list indexed by a tensor reads its value
                self.hit("tensor-to-python-scalar", e, "Python sequence indexed by a tensor")
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
                self.hit("tensor-to-python-scalar", e, "Python sequence indexed by a tensor")
            return SCALAR
        return UNKNOWN

    # ---- calls ------------------------------------------------------------------------------
    def call(self, e: ast.Call) -> V:
        func = e.func
        q = self.qualify(func)
        bare: str | None = None
        if (
            isinstance(func, ast.Name)
            and q is None
            and func.id not in self.locals
            and func.id not in self.env  # comprehension variables, walrus targets
            and func.id not in self.ix.functions
            and func.id not in self.ix.classes
            and func.id not in self.an.globals
        ):
            bare = func.id  # a builtin: print, open, int, ...
        recv: V | None = None
        callee: V | None = None
        if q is None and isinstance(func, ast.Attribute):
            recv = self.expr(func.value)
        elif q is None and not isinstance(func, ast.Name):
            callee = self.expr(func)  # self.layers[i](x), getattr(self, name)(x), ...
        args = [self.expr(a) for a in e.args]
        kwargs = {k.arg: self.expr(k.value) for k in e.keywords if k.arg is not None}
        for k in e.keywords:
            if k.arg is None:
                self.expr(k.value)
        if bare is not None:
            return self.builtin_call(e, bare, args)
        if q is not None:
            return self.module_call(e, q, args, kwargs)
        if isinstance(func, ast.Attribute) and recv is not None:
            return self.method_call(e, func, recv, args, kwargs)
        if isinstance(func, ast.Name):
            return self.local_call(e, func.id, args, kwargs)
        if callee is not None and callee.k == K.MODULE:
            return self.call_module(e, callee, args, kwargs)
        return UNKNOWN

    def reach(
        self, fi: FuncInfo, e: ast.AST, args: list[V], kwargs: dict[str, V], bound_self: bool
    ) -> V:
        """Record a call into a same-file function; returns its value as known so far."""
        if self.quiet or self.fi is None:
            return UNKNOWN
        if fi.disabled:
            self.hit(
                "compiler-disabled-call", e, f"call to {fi.name}(), which is compiler-disabled"
            )
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
            self.hit("rnn", e, f"nn.{rnn[0].rsplit('.', 1)[-1]} module call")
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
                    self.hit(
                        "module-construction", e, f"{name}(...) constructed inside compiled code"
                    )
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

    def builtin_call(self, e: ast.Call, fn: str, args: list[V]) -> V:
        a0 = args[0] if args else UNKNOWN
        if fn == "print":
            if "print" not in self.an.flags.reorderable:
                self.hit("print-call", e)
            return SCALAR
        if fn in ("open", "input"):
            self.hit("file-io", e, f"{fn}() call", IO_GB[f"builtins.{fn}"])
            return FILE if fn == "open" else SCALAR
        if fn == "breakpoint":
            self.hit("debugger", e, "breakpoint() call", "GB0059")
            return SCALAR
        if fn in ("int", "float", "bool", "complex") and len(args) == 1:
            if a0.tensor:
                if not (self.an.flags.capture_scalar_outputs and fn != "bool"):
                    self.hit("tensor-to-python-scalar", e, f"{fn}() of a tensor")
            elif a0.k == K.NDARRAY:
                self.hit("numpy-to-python", e, f"{fn}() of a NumPy value computed from a tensor")
            return SCALAR
        if fn in ("str", "repr") and len(args) == 1 and a0.tensor:
            self.hit(
                "tensor-to-string", e, f"{fn}() of a tensor", "GB0569" if fn == "repr" else None
            )
            return SCALAR
        if fn == "range":
            if any(a.tensor for a in args):
                self.hit("tensor-to-python-scalar", e, "range() over a tensor", "GB0059")
            return SCALAR
        if fn in ("len", "isinstance", "issubclass", "hasattr", "callable", "id", "type", "str"):
            return SCALAR
        if fn in ("list", "tuple", "sorted", "reversed"):
            if a0.tensor or a0.k == K.SEQ:
                return SEQ
            return a0 if a0.k in (K.TUPLE, K.MODULE) else UNKNOWN
        if fn in ("any", "all") and len(args) == 1 and a0.k == K.SEQ and e.args:
            if isinstance(e.args[0], (ast.GeneratorExp, ast.ListComp)):
                # any(t.max() > 10 for t in ts): bool() of each tensor element.
                self.hit("data-dependent-branch", e, f"{fn}() over tensor conditions")
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
        if fn == "getattr" and len(args) >= 2 and args[0].k == K.SELF:
            return UNKNOWN
        return UNKNOWN

    def module_call(self, e: ast.Call, q: str, args: list[V], kwargs: dict[str, V]) -> V:
        """A call to a function reached through an import: torch.*, numpy.*, time.*, ..."""
        root, _, rest = q.partition(".")
        last = q.rsplit(".", 1)[-1]
        any_tensor = any(a.tensor for a in args) or any(v.tensor for v in kwargs.values())
        if root == "torch":
            return self.torch_call(e, q, args, kwargs)
        if root == "numpy":
            if rest.startswith("random."):
                self.numpy_random(e, rest[len("random.") :], q)
                return NDARRAY if any_tensor else UNKNOWN
            if q in IO_GB:
                self.hit("file-io", e, f"{_short(q)}() call", IO_GB[q])
                return UNKNOWN
            if any_tensor or any(a.k == K.NDARRAY for a in args):
                return NDARRAY
            return SCALAR if all(a.k == K.SCALAR for a in args) else UNKNOWN
        if root == "time" and last in WALL_CLOCK:
            self.hit("wall-clock", e, f"{q}() call")
            return SCALAR
        if root == "datetime" and last in ("now", "utcnow", "today", "fromtimestamp"):
            self.hit("datetime-now", e, f"{_short(q)}() call")
            return UNKNOWN
        if root == "random":
            # random.uniform/randint/randrange with constant arguments are traced (verified).
            if last not in ("uniform", "randint", "randrange") or any_tensor:
                self.hit("python-random", e, f"{q}() call")
            return SCALAR
        if q == "warnings.warn":
            if "warnings.warn" not in self.an.flags.reorderable:
                self.hit("warnings-call", e)
            return SCALAR
        if root == "logging":
            if last in LOG_METHODS and rest.count(".") == 0:
                if q not in self.an.flags.reorderable:
                    self.hit("logging-module-call", e, f"{q}() call")
                return SCALAR
            if last == "getLogger":
                return LOGGER
        if q in ("pdb.set_trace", "ipdb.set_trace", "pudb.set_trace", "pdb.post_mortem"):
            self.hit("debugger", e, f"{q}() call", "GB0007" if root == "pdb" else "")
            return SCALAR
        if q in FRAME_FNS:
            self.hit("frame-inspection", e, f"{q}() call")
            return UNKNOWN
        if q in IO_GB:
            self.hit("file-io", e, f"{q}() call", IO_GB[q])
            return UNKNOWN
        if root == "os" and last in OS_IO:
            self.hit("file-io", e, f"{q}() call", "GB0007")
            return UNKNOWN
        if root in ("subprocess", "shutil"):
            self.hit("file-io", e, f"{q}() call", "GB0007" if root == "subprocess" else "")
            return UNKNOWN
        if q == "copy.deepcopy":
            a0 = args[0] if args else UNKNOWN
            if a0.tensor or a0.k == K.SEQ:
                self.hit("deepcopy", e, None, "GB4198")
            elif a0.k in (K.MODULE, K.SELF):
                self.hit("deepcopy", e, "copy.deepcopy() of a module", "GB0264")
            return a0
        if q == "math" or root == "math":
            if any_tensor:
                self.hit("tensor-to-python-scalar", e, f"{q}() on a tensor", "GB0033")
            return SCALAR
        for lib, gb in LIBRARIES.items():
            if q == lib or q.startswith(lib + "."):
                self.hit("non-torch-library", e, f"{q}() call", gb or "")
                return UNKNOWN
        if root == "functools" and last == "partial":
            return UNKNOWN
        if root == "torch_utils":
            return UNKNOWN
        # A logger object imported from elsewhere: recognisable by name only.
        parts = q.split(".")
        if len(parts) >= 2 and parts[-2] in LOGGERISH and last in LOG_METHODS:
            self.hit("logger-call", e, f"{parts[-2]}.{last}() call", "")
            return SCALAR
        return UNKNOWN

    def numpy_random(self, e: ast.Call, fn: str, q: str) -> None:
        if fn == "seed" or "." in fn:
            return
        if fn not in NP_RANDOM_TRACED:
            self.hit("numpy-random-unsupported", e, f"np.random.{fn}() call")
            return
        if fn == "shuffle":
            return
        has_size = any(k.arg == "size" for k in e.keywords)
        pos_limit = NP_RANDOM_SIZE_POS.get(fn, 0)
        if not has_size and len(e.args) <= pos_limit:
            self.hit("numpy-random-scalar", e, f"np.random.{fn}() without a size")

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
            self.hit("python-random", e, f"{q}() call")
            return UNKNOWN
        if q in ("torch.cuda.manual_seed", "torch.cuda.manual_seed_all"):
            self.hit("python-random", e, f"{q}() call")
            return UNKNOWN
        if q in ("torch.save", "torch.load"):
            self.hit("file-io", e, f"{q}() call", "GB0007")
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
                self.hit("module-construction", e, f"nn.{fn}(...) created inside compiled code")
                return TENSOR
            if fn in PARAM_LAYERS:
                self.hit("module-construction", e, f"nn.{fn}(...) constructed inside compiled code")
            if fn in CONTAINERS:
                return m.module_of(self._module_classes_in(e))
            return m.module_of(frozenset({q})) if fn[:1].isupper() else UNKNOWN
        if q in PACK_FNS:
            self.hit("rnn", e, f"{_short(q)}() call", "GB0007")
            return UNKNOWN
        if ns not in TENSOR_NS:
            return TENSOR if ns == "torch.utils.checkpoint" else UNKNOWN
        if fn.startswith("_"):
            return UNKNOWN  # private ops: return types vary (bools, tuples, handles)
        # torch.<op>, F.<op>, torch.linalg.<op>, ...
        if fn in TORCH_DATA_BOOL:
            self.hit("data-dependent-bool-op", e, f"{_short(q)}() returns a Python bool")
            return SCALAR
        if fn in DYNAMIC_SHAPE_FNS and not self.an.flags.capture_dynamic_output_shape_ops:
            self.hit("dynamic-shape-op", e, f"{_short(q)}() has a data-dependent output shape")
        if fn == "where" and len(e.args) == 1 and not e.keywords:
            if not self.an.flags.capture_dynamic_output_shape_ops:
                self.hit("dynamic-shape-op", e, "torch.where(condition) has a data-dependent shape")
            return SEQ
        if fn == "repeat_interleave" and not self.an.flags.capture_dynamic_output_shape_ops:
            reps = args[1] if len(args) > 1 else kwargs.get("repeats")
            if (len(args) == 1 and args[0].tensor and not kwargs) or (
                reps is not None and reps.tensor
            ):
                self.hit("dynamic-shape-op", e, "repeat_interleave() with tensor repeats")
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
                self.hit("logger-call", e, f"logger.{name}() call")
            return SCALAR
        if recv.k == K.FILE:
            return UNKNOWN  # open() was already flagged
        if recv.k == K.NDARRAY:
            if name in ("item", "tolist"):
                self.hit(
                    "numpy-to-python",
                    e,
                    f"ndarray.{name}() of a NumPy value computed from a tensor",
                    "GB0109" if name == "tolist" else "GB0033",
                )
                return SCALAR
            return NDARRAY
        if recv.tensor or recv.k == K.UNKNOWN:
            return self.tensor_method(e, func, recv, name, args, kwargs)
        if recv.k == K.SEQ and name in ("index", "count"):
            return SCALAR
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
                gb = "GB0033" if _int_tensor_expr(func.value) else "GB0109"
                self.hit("tensor-tolist", e, None, gb)
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
            self.hit("data-dependent-bool-op", e, f"Tensor.{name}() returns a Python bool")
            return SCALAR
        if name in DYNAMIC_SHAPE_FNS and not flags.capture_dynamic_output_shape_ops:
            self.hit("dynamic-shape-op", e, f"Tensor.{name}() has a data-dependent output shape")
            if any(k.arg in ("as_tuple", "return_inverse", "return_counts") for k in e.keywords):
                return SEQ
            return TENSOR
        if name == "repeat_interleave" and args and args[0].tensor:
            if not flags.capture_dynamic_output_shape_ops:
                self.hit("dynamic-shape-op", e, "repeat_interleave() with tensor repeats")
            return TENSOR
        if name in ("resize_", "resize_as_"):
            self.hit(
                "tensor-meta-mutation",
                e,
                f"Tensor.{name}() call",
                "GB0126" if name == "resize_" else "GB0127",
            )
            return TENSOR
        if name == "requires_grad_":
            self.hit("tensor-meta-mutation", e, "Tensor.requires_grad_() call", "GB8985")
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


# --------------------------------------------------------------------------------------------
def analyze_source(source: str, path: str) -> list[Finding]:
    """Static hints for one file's text. Syntax errors give [] (reported elsewhere)."""
    return _analyze(source, path, None)


def analyze_tree(tree: ast.Module, source: str, path: str) -> list[Finding]:
    """Like :func:`analyze_source` for a caller that has already parsed ``source``."""
    return _analyze(source, path, tree)


def _analyze(source: str, path: str, tree: ast.Module | None) -> list[Finding]:
    # Parsing and the analysis allocate many small objects that all die at the end; cyclic GC
    # passes over the growing AST in the middle cost more than the analysis itself (and grow
    # with the file), so collection is paused and the index's back-references are cut after,
    # leaving everything to reference counting.
    gc_enabled = gc.isenabled()
    gc.disable()
    an: Analyzer | None = None
    try:
        if tree is None:
            tree = ast.parse(source, filename=path)
        an = Analyzer(source, path, tree)
        return an.run()
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    except Exception:  # a bug here must not break the editor's didChange path
        _log.warning("static analysis failed for %s", path, exc_info=True)
        return []
    finally:
        if an is not None:
            an.ix.dispose()
        if gc_enabled:
            gc.enable()


def analyze_path(path: str | Path) -> list[Finding]:
    """Static hints for a file on disk; unreadable or non-UTF-8 files give []."""
    p = Path(path)
    try:
        data = p.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    if text.startswith("\ufeff"):
        text = text[1:]
    return analyze_source(text, str(path))


def reachable_functions(source: str, path: str) -> dict[str, set[str]]:
    """Target name -> qualified names of the same-file functions it statically reaches.

    The daemon can pass the union over completed dynamic runs as ``covered_functions`` to
    :meth:`Reconciler.update_dynamic`.
    """
    out: dict[str, set[str]] = {}
    try:
        an = Analyzer(source, path, ast.parse(source, filename=path))
        an.run()
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return out
    for fid, st in an.states.items():
        for t in st.targets:
            out.setdefault(t, set()).add(an.funcs[fid].qualname)
    an.ix.dispose()
    return out
