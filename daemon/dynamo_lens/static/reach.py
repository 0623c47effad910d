"""What a unit of analysis can reach, from the source alone: the key under which its result is
reused after an edit, and where each definition it reached sits, so that reused findings move
with the text.

A unit (a ``compile_example`` function, a guessed class, a configured target) reaches the
functions and classes it names, what they name in turn, and the workspace modules it imports,
by name (``f``, ``helpers.f``, ``from .helpers import f``). The key holds, for each module it
reaches, every module-level statement that is not a definition (imports, constants, code run
at import: any of them can change what a target does), every definition whose decorator could
do something at import, and the source of each definition reached. Positions are not in the
key: an edit above a function moves it without changing its result.

Where the source cannot say what a unit reaches (``getattr`` with a computed name, ``exec``,
``eval``, ``globals()``, a dynamic import, ``import *``), the module's every definition is in
the key (``Reach.uncertain`` says why). Names that are not the workspace's (libraries,
builtins) are not followed: a library changes with the torch version and the environment,
which the result cache keys separately.
"""

from __future__ import annotations

import ast
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

FuncOrClass = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
# Calls that reach code the source does not name.
_DYNAMIC_CALLS = {"getattr", "exec", "eval", "globals", "locals", "vars", "__import__"}
_DYNAMIC_ATTRS = {"import_module"}
# Decorators that only wrap the function they decorate: no effect at import beyond it.
PLAIN_DECORATORS = {
    "staticmethod",
    "classmethod",
    "property",
    "cached_property",
    "wraps",
    "lru_cache",
    "cache",
    "no_grad",
    "inference_mode",
    "enable_grad",
    "disable",
    "compile",
    "dataclass",
    "setter",
    "getter",
    "deleter",
    "abstractmethod",
    "overload",
    "override",
    "final",
}


@dataclass
class Span:
    """A definition the unit reached: its module, name and lines (decorators included)."""

    path: str
    name: str
    start: int
    end: int


@dataclass
class Reach:
    key: str
    spans: list[Span] = field(default_factory=list)
    uncertain: str = ""  # why whole modules are in the key ("" when the source says)
    modules: list[str] = field(default_factory=list)  # the workspace files in the key


@dataclass
class _Module:
    path: str
    text: str
    defs: dict[str, FuncOrClass]
    # name -> (module it comes from, the name there or "" for the module itself)
    imports: dict[str, tuple[str, str]]
    statements: list[str]  # module-level code that is not a plain definition, as source
    star: bool  # `from x import *` of a workspace module
    # What runs at import: module-level statements and decorated definitions. What they name
    # is reached by every unit that reaches the module (``model = Net()`` makes Net's code
    # part of a unit that returns ``model``).
    runs: list[ast.stmt] = field(default_factory=list)


class Reachability:
    """Parses the workspace's modules once per content and answers per unit."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))
        self._modules: dict[tuple[str, str], _Module | None] = {}

    def _module(self, path: str, text: str | None = None) -> _Module | None:
        if text is None:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
        key = (path, hashlib.sha256(text.encode()).hexdigest())
        if key not in self._modules:
            if len(self._modules) > 4096:
                self._modules.clear()
            self._modules[key] = self._parse(path, text)
        return self._modules[key]

    def _parse(self, path: str, text: str) -> _Module | None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return None
        defs: dict[str, FuncOrClass] = {}
        imports: dict[str, tuple[str, str]] = {}
        statements: list[str] = []
        runs: list[ast.stmt] = []
        star = False
        for stmt in tree.body:
            if isinstance(stmt, FuncOrClass):
                defs[stmt.name] = stmt
                if not all(_plain(d) for d in stmt.decorator_list):
                    # A decorator that may register the function at import: it runs whether
                    # or not a unit names the function.
                    statements.append(_source(text, stmt))
                    runs.append(stmt)
                continue
            statements.append(ast.get_source_segment(text, stmt) or ast.dump(stmt))
            runs.append(stmt)
            if isinstance(stmt, ast.Import | ast.ImportFrom):
                star = self._bind(path, stmt, imports) or star
        return _Module(path, text, defs, imports, statements, star, runs)

    def _bind(
        self, path: str, stmt: ast.Import | ast.ImportFrom, into: dict[str, tuple[str, str]]
    ) -> bool:
        """The workspace names an import binds, into ``into``; whether it is ``import *`` of a
        workspace module."""
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                target = self._resolve(path, alias.name, 0)
                # `import a.b` binds `a` (then `a.b.f` is used); `import a.b as c` binds a.b.
                if target is not None and (alias.asname or "." not in alias.name):
                    into[alias.asname or alias.name] = (target, "")
                elif "." in alias.name and not alias.asname:
                    top = self._resolve(path, alias.name.split(".")[0], 0)
                    if top is not None:
                        into[alias.name.split(".")[0]] = (top, "")
            return False
        star = False
        base = self._resolve(path, stmt.module or "", stmt.level)
        for alias in stmt.names:
            if alias.name == "*":
                star = star or base is not None
                continue
            dotted = f"{stmt.module or ''}.{alias.name}".strip(".")
            sub = self._resolve(path, dotted, stmt.level)
            if sub is not None:  # a submodule
                into[alias.asname or alias.name] = (sub, "")
            elif base is not None:
                into[alias.asname or alias.name] = (base, alias.name)
        return star

    def _resolve(self, importer: str, name: str, level: int) -> str | None:
        """The workspace file a module name refers to, as Python would find it from the
        importer (its folder, then the workspace root), or None (a library)."""
        parts = [p for p in name.split(".") if p]
        if level:
            base = Path(importer).parent
            for _ in range(level - 1):
                base = base.parent
            roots = [base]
        else:
            roots = [Path(importer).parent, self.root]
        for root in roots:
            cand = root.joinpath(*parts) if parts else root
            for f in (cand.with_suffix(".py") if parts else None, cand / "__init__.py"):
                if f is not None and f.is_file():
                    real = os.path.realpath(f)
                    if real.startswith(str(self.root) + os.sep):
                        return real
        return None

    def of(
        self,
        path: str,
        name: str,
        text: str | None = None,
        stop: frozenset[tuple[str, str]] = frozenset(),
    ) -> Reach:
        """What the definition ``name`` of ``path`` (its text, if given) can reach; the
        definitions in ``stop`` ((real path, name)) are not followed (an example's targets,
        keyed on their own)."""
        path = os.path.realpath(path)
        start = self._module(path, text)
        if start is None:
            # Unparsable: nothing to reuse (the key changes with every byte).
            return Reach(hashlib.sha256((text or path).encode()).hexdigest(), [], "unparsable")
        modules: dict[str, _Module] = {path: start}
        reached: set[tuple[str, str]] = set()
        whole: set[str] = set()
        uncertain: list[str] = []
        todo = [(path, name)]

        def module(mpath: str) -> _Module | None:
            if mpath not in modules:
                mod = self._module(mpath)
                if mod is None:
                    return None
                modules[mpath] = mod
                at_import(mod)
            return modules[mpath]

        def at_import(mod: _Module) -> None:
            """What the module runs when imported reaches what it names."""
            for stmt in mod.runs:
                if isinstance(stmt, FuncOrClass):
                    todo.append((mod.path, stmt.name))
                    continue
                if isinstance(stmt, ast.Import | ast.ImportFrom):
                    # Importing a workspace module runs its module-level code.
                    bound: dict[str, tuple[str, str]] = {}
                    self._bind(mod.path, stmt, bound)
                    for target, _there in bound.values():
                        module(target)
                for ref, _why in _references(stmt):
                    head = ref.partition(".")[0]
                    if head in mod.defs:
                        todo.append((mod.path, head))
                    elif head in mod.imports and mod.imports[head][1]:
                        todo.append(mod.imports[head])

        def everything(mpath: str) -> None:
            mod = module(mpath)
            if mod is not None and mpath not in whole:
                whole.add(mpath)
                todo.extend((mpath, d) for d in mod.defs)

        at_import(start)
        while todo:
            mpath, dname = todo.pop()
            mod = module(mpath)
            if mod is None or (mpath, dname) in reached or (mpath, dname) in stop:
                continue
            if mod.star:
                everything(mpath)
            node = mod.defs.get(dname)
            if node is None:
                if dname in mod.imports:  # a name re-exported from another module
                    target, there = mod.imports[dname]
                    if there:
                        todo.append((target, there))
                    else:
                        everything(target)
                continue
            reached.add((mpath, dname))
            names = dict(mod.imports)
            for sub in ast.walk(node):
                if isinstance(sub, ast.Import | ast.ImportFrom) and self._bind(mpath, sub, names):
                    uncertain.append(f"import * in {dname}")
                    everything(mpath)
            for ref, why in _references(node):
                if why:
                    uncertain.append(f"{why} in {dname} ({os.path.basename(mpath)})")
                    everything(mpath)
                    continue
                head, _, rest = ref.partition(".")
                if head in mod.defs:
                    todo.append((mpath, head))
                elif head in names:
                    target, there = names[head]
                    if there:
                        todo.append((target, there))
                    elif rest:
                        module(target)
                        todo.append((target, rest.split(".")[0]))
                    else:
                        everything(target)  # a module passed around: any of it may run
        digest = hashlib.sha256()
        spans = []
        for mpath in sorted(modules):
            mod = modules[mpath]
            digest.update(f"\0module {os.path.relpath(mpath, self.root)}\0".encode())
            for stmt in mod.statements:
                digest.update(stmt.encode() + b"\0")
            for dname in sorted(d for m, d in reached if m == mpath):
                node = mod.defs[dname]
                digest.update(f"\0def {dname}\0".encode() + _source(mod.text, node).encode())
                spans.append(Span(mpath, dname, _first_line(node), node.end_lineno or node.lineno))
        why = "; ".join(dict.fromkeys(uncertain))
        return Reach(digest.hexdigest(), spans, why, sorted(modules))


def _plain(decorator: ast.expr) -> bool:
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    last = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return last in PLAIN_DECORATORS


def _first_line(node: FuncOrClass) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def _source(text: str, node: FuncOrClass) -> str:
    lines = text.splitlines()
    return "\n".join(lines[_first_line(node) - 1 : node.end_lineno or node.lineno])


def _references(node: ast.AST) -> Iterator[tuple[str, str]]:
    """Each global name a definition uses (``f``, ``helpers.f``), and what makes it uncertain
    (a reason, else "")."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            yield sub.id, ""
        elif isinstance(sub, ast.Attribute):
            chain = _dotted(sub)
            if chain is not None:
                yield chain, ""
        if isinstance(sub, ast.Call):
            fn = sub.func
            # Builtins by their bare name (`model.eval()` is a method); import_module anyhow.
            name = fn.id if isinstance(fn, ast.Name) else ""
            attr = fn.attr if isinstance(fn, ast.Attribute) else ""
            constant_getattr = (
                name == "getattr" and len(sub.args) >= 2 and isinstance(sub.args[1], ast.Constant)
            )
            if (name in _DYNAMIC_CALLS and not constant_getattr) or _DYNAMIC_ATTRS & {name, attr}:
                yield "", f"{name or attr}()"


def _dotted(node: ast.Attribute) -> str | None:
    parts = [node.attr]
    cur: ast.expr = node.value
    while isinstance(cur, ast.Attribute):
        parts.append(cur.attr)
        cur = cur.value
    if not isinstance(cur, ast.Name):
        return None
    parts.append(cur.id)
    return ".".join(reversed(parts))
