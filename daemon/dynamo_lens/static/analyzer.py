"""The static analysis of one file: which targets it compiles, which of its functions each
target reaches (a worklist that walks each function with the values it is called with), and
the findings for the rule hits of every function a target reaches.

``analyze_source`` is the entry point; ``walker.py`` evaluates one function, ``checks/`` hold
the rules that listen to it.
"""

from __future__ import annotations

import ast
import gc
import logging
from collections import deque
from pathlib import Path

from ..config import is_example_name
from ..findings import Finding, Frame, Kind, Severity, gb_doc_url
from . import model as m
from .model import (
    SCALAR,
    UNKNOWN,
    ClassInfo,
    FuncInfo,
    K,
    ModuleIndex,
    V,
    dotted,
    join,
)
from .state import (
    LOOP_NOTE,
    MAX_DEPTH,
    MAX_RUNS,
    NO_CONST,
    Flags,
    FuncState,
    Hit,
    Target,
    bind,
    is_forward,
    join_params,
    param_defaults,
    tensor_helper,
)
from .syntax import ATTR_STORE, ann_value
from .torch_api import LOG_METHODS, MODULE_CHAIN, PARAM_LAYERS
from .walker import Walker

_log = logging.getLogger(__name__)


class Analyzer:
    def __init__(self, source: str, path: str, tree: ast.Module) -> None:
        self.source = source
        self.path = path
        self.tree = tree
        self.lines = m.source_lines(source)
        self.ix = ModuleIndex(tree)
        self.class_by_qual = {c.qualname: c for c in self.ix.all_classes}
        self.guessed_targets: set[str] = set()  # zero-configuration guesses, not declared
        self.flags = Flags()
        self.globals: dict[str, V] = {}
        self._defaults: dict[tuple[int, bool], dict[str, V]] = {}
        self._scan_module_config()
        self.states: dict[int, FuncState] = {}
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
        """Memoised :func:`state.param_defaults` (asked at every call site). Do not mutate."""
        key = (id(fi), entry)
        out = self._defaults.get(key)
        if out is None:
            out = self._defaults[key] = param_defaults(fi, entry)
        return out

    def _attribute_stores(self) -> dict[str, int]:
        """How often each attribute name is assigned anywhere in the file (``x.name = ...``).

        A regex over the text, not a tree walk: this runs on every keystroke. Over-counting
        (a match in a string) only makes the constant-attribute folding more careful.
        """
        counts: dict[str, int] = {}
        for name in ATTR_STORE.findall(self.source):
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
                ci.attrs[stmt.target.id] = ann_value(stmt.annotation) or UNKNOWN
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
            w = Walker(self, fi, self.param_defaults(fi, entry=False), {}, quiet=True)
            w.run()
            for attr, (v, const) in w.self_stores.items():
                ci.attrs[attr] = join(ci.attrs.get(attr), v) if attr in ci.attrs else v
                if const is not NO_CONST and stores.get(attr, 0) == 1 and "" not in stores:
                    ci.const_attrs[attr] = const

    def _module_globals(self) -> dict[str, V]:
        w = Walker(self, None, {}, {}, quiet=True)
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
                        o.params = join_params(o.params, t.params) if o.params else t.params
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
            if is_example_name(name):
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
                if tensor_helper(fi):
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
            fi = self.lookup_func(e.id, scope)
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

    def lookup_func(self, name: str, scope: FuncInfo | None) -> FuncInfo | None:
        s = scope
        while s is not None:
            if name in s.nested:
                return s.nested[name]
            s = s.parent
        return self.ix.functions.get(name)

    def _example_targets(self, fi: FuncInfo) -> list[Target]:
        w = Walker(self, fi, {}, {}, quiet=True)
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
            qw = Walker(self, fi, {}, {}, quiet=True)
            qw.env = dict(env)
            args_v = qw.expr(args_e)
            if args_v.k == K.TUPLE:
                args = list(args_v.elts)
                kwargs: dict[str, V] = {}
                if isinstance(kw_e, ast.Dict):
                    for k, v in zip(kw_e.keys, kw_e.values, strict=True):
                        if isinstance(k, ast.Constant) and isinstance(k.value, str):
                            kwargs[k.value] = qw.expr(v)
                t.params = bind(t.entry, args, kwargs, bound_self=True)
            out.append(t)
        return out

    # ---- the worklist -----------------------------------------------------------------------
    def state(self, fi: FuncInfo) -> FuncState:
        st = self.states.get(id(fi))
        if st is None:
            st = self.states[id(fi)] = FuncState()
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
            st.params = join_params(st.params, base) if st.params else base
            if t.name not in st.targets:
                st.targets.append(t.name)
            self._enqueue(t.entry)
        while self._queue:
            fi = self._queue.popleft()
            st = self.state(fi)
            if st.pending and st.runs < MAX_RUNS:
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
            w = Walker(self, fi, st.params, st.closure, quiet=False)
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
        base = self.param_defaults(callee, entry=cst.entry or is_forward(callee))
        incoming = {**base, **bind(callee, args, kwargs, bound_self)}
        first = cst.runs == 0 and not cst.pending
        if cst.entry:
            new = cst.params  # a target's own parameters stay as declared
        elif first and not cst.params:
            new = incoming
        else:
            new = join_params(cst.params, incoming)
        changed = new != cst.params
        cst.params = new
        if closure:
            merged = join_params(cst.closure, closure) if cst.closure else closure
            changed = changed or merged != cst.closure
            cst.closure = merged
        for tname in st.targets:
            if tname not in cst.targets:
                cst.targets.append(tname)
                changed = True
        if cst.via is None and not cst.entry:
            cst.via = (caller, node)
        if (first or changed) and cst.runs < MAX_RUNS:
            if id(callee) not in self._active and len(self._active) < MAX_DEPTH:
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

    def _finding(self, h: Hit, fi: FuncInfo, st: FuncState, chain: list[Frame]) -> Finding:
        rule = h.rule
        span = m.function_span(fi.node)
        gb = h.gb if h.gb is not None else rule.gb_id
        if gb == "":
            gb = None
        line, col, end_line, end_col = self._span(h.node)
        message = f"Likely graph break: {h.what}" if h.what else rule.message
        explanation = rule.explanation + (LOOP_NOTE if h.in_loop else "")
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
            doc_url=gb_doc_url(gb),
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
