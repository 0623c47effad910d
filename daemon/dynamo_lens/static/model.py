"""What the static analysis knows about one module: imports, classes, functions and values.

Values are a tiny lattice (tensor, bool tensor, tuple, module, scalar, ...) that is just precise
enough for the rules to tell a tensor from a Python number; anything the source does not show
is UNKNOWN, and rules stay silent on UNKNOWN.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

FuncNode = ast.FunctionDef | ast.AsyncFunctionDef


class K(Enum):
    TENSOR = "tensor"
    BOOL = "bool_tensor"  # a tensor known to hold booleans (mask)
    INDEX0 = "index0_tensor"  # a 0-d integer tensor (argmax() without dim)
    SEQ = "tensors"  # tuple/list of tensors (split, chunk, topk, ...)
    TUPLE = "tuple"  # a literal tuple with per-element values
    NDARRAY = "ndarray"  # NumPy value computed from a tensor
    SCALAR = "scalar"  # known Python non-tensor (number, str, bool, shape, None, ...)
    MODULE = "module"  # nn.Module instance; calling it gives tensors
    SELF = "self"  # the instance inside a method
    LOGGER = "logger"  # logging.Logger
    FILE = "file"
    UNKNOWN = "unknown"


class V(NamedTuple):
    # A NamedTuple rather than a dataclass: values are compared and joined constantly, and
    # tuple equality runs in C.
    k: K
    classes: frozenset[str] = frozenset()  # MODULE/SELF: local class names it may be
    elts: tuple[V, ...] = ()  # TUPLE elements

    @property
    def tensor(self) -> bool:
        return self.k in (K.TENSOR, K.BOOL, K.INDEX0)


TENSOR = V(K.TENSOR)
BOOL = V(K.BOOL)
INDEX0 = V(K.INDEX0)
SEQ = V(K.SEQ)
NDARRAY = V(K.NDARRAY)
SCALAR = V(K.SCALAR)
MODULE = V(K.MODULE)
LOGGER = V(K.LOGGER)
FILE = V(K.FILE)
UNKNOWN = V(K.UNKNOWN)


def module_of(classes: frozenset[str]) -> V:
    return V(K.MODULE, classes)


def tup(elts: list[V]) -> V:
    return V(K.TUPLE, elts=tuple(elts))


def join(a: V | None, b: V | None) -> V:
    if a is None:
        return b if b is not None else UNKNOWN
    if b is None or a is b or a == b:
        return a
    if a.tensor and b.tensor:
        return TENSOR
    if a.k == b.k == K.MODULE:
        return module_of(a.classes | b.classes)
    if a.k == b.k == K.TUPLE and len(a.elts) == len(b.elts):
        return tup([join(x, y) for x, y in zip(a.elts, b.elts, strict=True)])
    if {a.k, b.k} <= {K.SEQ, K.TUPLE}:
        return SEQ if all(e.tensor for v in (a, b) for e in v.elts) else UNKNOWN
    return UNKNOWN


def element(v: V) -> V:
    """What iterating over or indexing into ``v`` yields."""
    if v.tensor or v.k == K.SEQ:
        return TENSOR
    if v.k == K.MODULE:  # ModuleList / Sequential
        return v
    if v.k == K.TUPLE:
        out: V | None = None
        for e in v.elts:
            out = join(out, e)
        return out or UNKNOWN
    if v.k in (K.SCALAR, K.NDARRAY):
        return v
    return UNKNOWN


def unpack(v: V, n: int) -> list[V]:
    if v.k == K.TUPLE and len(v.elts) == n:
        return list(v.elts)
    return [element(v)] * n


@dataclass(eq=False)  # identity: compared in worklists and MROs, must be cheap
class FuncInfo:
    node: FuncNode
    qualname: str
    cls: ClassInfo | None = None  # set for methods
    parent: FuncInfo | None = None  # enclosing function, for nested defs
    compiled: bool = False  # decorated with torch.compile
    disabled: bool = False  # decorated with torch.compiler.disable / torch._dynamo.disable
    kind: str = "function"  # "function" | "method" | "staticmethod" | "classmethod"
    nested: dict[str, FuncInfo] = field(default_factory=dict)
    # Collected in the same pass over the body (statements only, nested defs excluded):
    locals: set[str] = field(default_factory=set)  # names the function binds
    assigns: dict[str, ast.expr] = field(default_factory=dict)  # last `name = value`
    appends: dict[str, list[ast.expr]] = field(default_factory=dict)  # `name.append(x)`
    returns: list[ast.expr] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.node.name


@dataclass(eq=False)
class ClassInfo:
    node: ast.ClassDef
    qualname: str
    bases: list[str]  # qualified base names ("torch.nn.Module", "Block", ...)
    methods: dict[str, FuncInfo] = field(default_factory=dict)
    is_module: bool = False
    attrs: dict[str, V] = field(default_factory=dict)  # self.<name> values, from __init__
    const_attrs: dict[str, object] = field(default_factory=dict)  # never-reassigned constants
    attrs_ready: bool = False  # attrs/const_attrs are filled on first use (see load_attrs)

    @property
    def name(self) -> str:
        return self.node.name


_NEWLINE = re.compile(r"\r\n|\r|\n")


def source_lines(source: str) -> list[str]:
    """Lines as the tokenizer counts them (``str.splitlines`` also splits on \\f, \\x1c,
    \\u2028, ..., which would shift every line after such a character)."""
    return _NEWLINE.split(source)


def function_span(node: FuncNode) -> tuple[int, int]:
    """First line (decorators included) and last line of a def."""
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return start, node.end_lineno or node.lineno


def text_digest(lines: list[str], start: int, end: int) -> str:
    """Hash of lines ``start..end`` (1-based, inclusive): a function's identity for the
    reconciler, shared by the hints (``data["function_digest"]``) and ``function_hashes``."""
    text = "\n".join(lines[start - 1 : end])
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` -> "a.b.c"; None for anything that is not a plain attribute chain."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def import_aliases(stmt: ast.Import | ast.ImportFrom, into: dict[str, str]) -> None:
    if isinstance(stmt, ast.Import):
        for a in stmt.names:
            if a.asname:
                into[a.asname] = a.name
            else:
                root = a.name.split(".")[0]
                into[root] = root
    else:
        if stmt.level or not stmt.module:
            return  # relative imports: user code in other files, not a library
        for a in stmt.names:
            if a.name != "*":
                into[a.asname or a.name] = f"{stmt.module}.{a.name}"


_MODULE_BASES = ("torch.nn.",)


class ModuleIndex:
    """Module-level facts, computed once per source text."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.aliases: dict[str, str] = {}
        self.functions: dict[str, FuncInfo] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.all_funcs: list[FuncInfo] = []
        self.globals: dict[str, V] = {}
        self.global_consts: dict[str, object] = {}
        self.global_nodes: dict[str, ast.expr] = {}  # last module-level value of each name
        self.all_classes: list[ClassInfo] = []
        self._mro: dict[int, list[ClassInfo]] = {}
        # Fills a class's attrs from its __init__; set by the analyzer, called lazily so that
        # classes the targets never reach cost nothing.
        self.load_attrs: Callable[[ClassInfo], None] | None = None
        self._collect(tree)
        self._classify_modules()

    # ----------------------------------------------------------------------------------------
    def qualify(self, node: ast.expr, local_aliases: dict[str, str] | None = None) -> str | None:
        """Resolve an attribute chain through imports: ``F.relu`` -> "torch.nn.functional.relu"."""
        d = dotted(node)
        if d is None:
            return None
        root, _, rest = d.partition(".")
        target = (local_aliases or {}).get(root) or self.aliases.get(root)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    def _collect(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            self._collect_stmt(stmt)

    def _collect_stmt(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            import_aliases(stmt, self.aliases)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fi = self._func(stmt, stmt.name, None, None)
            self.functions[stmt.name] = fi
        elif isinstance(stmt, ast.ClassDef):
            ci = self._class(stmt, stmt.name)
            self.classes[stmt.name] = ci
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    self.global_nodes[t.id] = stmt.value
                    if isinstance(stmt.value, ast.Constant):
                        self.global_consts[t.id] = stmt.value.value
                    else:
                        self.global_consts.pop(t.id, None)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
            self.global_nodes[stmt.target.id] = stmt.value
            if isinstance(stmt.value, ast.Constant):
                self.global_consts[stmt.target.id] = stmt.value.value
        elif isinstance(stmt, (ast.If, ast.Try)):
            # try/except ImportError and `if TYPE_CHECKING:` blocks hold imports and defs too.
            for sub in _sub_bodies(stmt):
                for s in sub:
                    self._collect_stmt(s)

    def _func(
        self, node: FuncNode, qualname: str, cls: ClassInfo | None, parent: FuncInfo | None
    ) -> FuncInfo:
        fi = FuncInfo(node, qualname, cls, parent)
        a = node.args
        fi.locals.update(p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs))
        fi.locals.update(p.arg for p in (a.vararg, a.kwarg) if p is not None)
        for dec in node.decorator_list:
            q = self.qualify(dec.func if isinstance(dec, ast.Call) else dec) or ""
            bare = dotted(dec.func if isinstance(dec, ast.Call) else dec) or ""
            if q in ("torch.compile",) or q.endswith("torch.compile"):
                fi.compiled = True
            elif q in _DISABLE_DECORATORS:
                fi.disabled = True
            elif bare == "staticmethod":
                fi.kind = "staticmethod"
            elif bare == "classmethod":
                fi.kind = "classmethod"
        if cls is not None and fi.kind == "function":
            fi.kind = "method"
        self.all_funcs.append(fi)
        self._nested(fi, node.body)
        return fi

    def _nested(self, fi: FuncInfo, body: list[ast.stmt]) -> None:
        """One pass over a function's statements: nested defs, bound names, assignments."""
        targets: list[ast.expr] = []
        for stmt in body:
            t = type(stmt)
            if t is ast.FunctionDef or t is ast.AsyncFunctionDef:
                assert isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
                fi.locals.add(stmt.name)
                fi.nested[stmt.name] = self._func(
                    stmt, f"{fi.qualname}.<locals>.{stmt.name}", None, fi
                )
                continue
            if t is ast.ClassDef:
                assert isinstance(stmt, ast.ClassDef)
                fi.locals.add(stmt.name)
                self._class(stmt, f"{fi.qualname}.<locals>.{stmt.name}")
                continue
            if t is ast.Assign:
                assert isinstance(stmt, ast.Assign)
                targets.extend(stmt.targets)
                for tg in stmt.targets:
                    if isinstance(tg, ast.Name):
                        fi.assigns[tg.id] = stmt.value
            elif t is ast.Expr:
                assert isinstance(stmt, ast.Expr)
                call = stmt.value
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr in ("append", "extend")
                    and isinstance(call.func.value, ast.Name)
                    and call.args
                ):
                    fi.appends.setdefault(call.func.value.id, []).append(call.args[0])
            elif t is ast.Return:
                assert isinstance(stmt, ast.Return)
                if stmt.value is not None:
                    fi.returns.append(stmt.value)
            elif t in (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor):
                targets.append(stmt.target)  # type: ignore[attr-defined]
            elif t is ast.With or t is ast.AsyncWith:
                assert isinstance(stmt, (ast.With, ast.AsyncWith))
                targets.extend(i.optional_vars for i in stmt.items if i.optional_vars)
            elif t in _TRY_TYPES:
                fi.locals.update(h.name for h in stmt.handlers if h.name)  # type: ignore[attr-defined]
            for sub in _sub_bodies(stmt):
                self._nested(fi, sub)
        while targets:
            tg = targets.pop()
            if isinstance(tg, ast.Name):
                fi.locals.add(tg.id)
            elif isinstance(tg, (ast.Tuple, ast.List)):
                targets.extend(tg.elts)
            elif isinstance(tg, ast.Starred):
                targets.append(tg.value)

    def _class(self, node: ast.ClassDef, qualname: str) -> ClassInfo:
        bases = [self.qualify(b) or dotted(b) or "?" for b in node.bases]
        ci = ClassInfo(node, qualname, bases)
        self.all_classes.append(ci)
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                ci.methods[stmt.name] = self._func(stmt, f"{qualname}.{stmt.name}", ci, None)
            elif isinstance(stmt, ast.ClassDef):
                self._class(stmt, f"{qualname}.{stmt.name}")
        return ci

    def _classify_modules(self) -> None:
        # Fixed point over local inheritance: a class is a module if a base is torch.nn.*,
        # a local module class, or (guess) an unknown external base while it defines forward.
        changed = True
        while changed:
            changed = False
            for ci in self.all_classes:
                if ci.is_module:
                    continue
                for b in ci.bases:
                    local = self.classes.get(b)
                    if (
                        b.startswith(_MODULE_BASES)
                        or (local is not None and local.is_module)
                        or (
                            local is None
                            and b not in ("object", "?")
                            and "forward" in ci.methods
                            and not b.startswith(("typing.", "enum.", "abc."))
                            # torch.autograd.Function also has a (static) forward
                            and not b.endswith("Function")
                        )
                    ):
                        ci.is_module = True
                        changed = True
                        break

    def dispose(self) -> None:
        """Cut the parent/class back-references so the index dies by reference counting."""
        for fi in self.all_funcs:
            fi.parent = None
            fi.cls = None
            fi.nested = {}
        for ci in self.all_classes:
            ci.methods = {}
        self._mro = {}
        self.load_attrs = None

    def mro(self, ci: ClassInfo) -> list[ClassInfo]:
        """The class and its same-file bases, nearest first (cached: asked per attribute)."""
        cached = self._mro.get(id(ci))
        if cached is not None:
            return cached
        out: list[ClassInfo] = []
        stack = [ci]
        while stack:
            c = stack.pop(0)
            if c in out:
                continue
            out.append(c)
            stack.extend(self.classes[b] for b in c.bases if b in self.classes)
        self._mro[id(ci)] = out
        return out

    def method(self, ci: ClassInfo, name: str) -> FuncInfo | None:
        for c in self.mro(ci):
            m = c.methods.get(name)
            if m is not None:
                return m
        return None

    def _ready(self, c: ClassInfo) -> None:
        if not c.attrs_ready:
            c.attrs_ready = True  # first, so that the loader's own walk does not recurse
            if self.load_attrs is not None:
                self.load_attrs(c)

    def class_attr(self, ci: ClassInfo, name: str) -> V | None:
        for c in self.mro(ci):
            self._ready(c)
            if name in c.attrs:
                return c.attrs[name]
        return None

    def class_const(self, ci: ClassInfo, name: str) -> tuple[bool, object]:
        for c in self.mro(ci):
            self._ready(c)
            if name in c.const_attrs:
                return True, c.const_attrs[name]
        return False, None


_DISABLE_DECORATORS = {
    "torch.compiler.disable",
    "torch._dynamo.disable",
    "torch._disable_dynamo",
}


_TRY_TYPES: tuple[type, ...] = (ast.Try, *([ast.TryStar] if hasattr(ast, "TryStar") else []))
# Which fields of each compound statement hold statement lists (a dict lookup per statement
# instead of probing every field: this runs over every statement on every keystroke).
_BODY_FIELDS: dict[type, tuple[str, ...]] = {
    ast.If: ("body", "orelse"),
    ast.For: ("body", "orelse"),
    ast.AsyncFor: ("body", "orelse"),
    ast.While: ("body", "orelse"),
    ast.With: ("body",),
    ast.AsyncWith: ("body",),
    **{t: ("body", "orelse", "finalbody") for t in _TRY_TYPES},
}


def _sub_bodies(stmt: ast.stmt) -> list[list[ast.stmt]]:
    t = type(stmt)
    if t is ast.Match:
        return [c.body for c in stmt.cases]  # type: ignore[attr-defined]
    fields = _BODY_FIELDS.get(t)
    if fields is None:
        return []
    out: list[list[ast.stmt]] = [b for f in fields if (b := getattr(stmt, f))]
    if t in _TRY_TYPES:
        out.extend(h.body for h in stmt.handlers)  # type: ignore[attr-defined]
    return out
