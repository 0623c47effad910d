"""Which other workspace files an edit of a helper module reaches.

A fix verified for one file's targets may edit a module other files import too. Those files'
targets run the edited code unverified, so the fix is not applied on their behalf. But a file
that imports only names the edit leaves alone (``from models.common import RMSNorm`` when the
edit is inside ``center_if_shifted``) runs none of the changed code: it is not counted.

What a module's changed names reach is followed through its own definitions, and then through
every file that imports one of them (the analysed file included: a file importing a function of
it that calls the helper runs the edit too), until nothing new is reached. Wherever the
analysis cannot be sure it counts the file: an edit or a use of a changed name that runs at
import (module level, a class body, a default value, a decorator, a registry), an import of the
module object used opaquely, ``import *``, lookups by name (``globals()``, ``getattr``,
``sys.modules``, a module ``__getattr__``, an import by a string), a file this Python cannot
parse that names the module.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..texts.source import iter_python_files
from .filewrite import WriteError, read_source

_DYNAMIC = frozenset(
    {"globals", "locals", "vars", "eval", "exec", "getattr", "__import__", "__getattr__"}
)
_DYNAMIC_ATTRS = frozenset({"modules", "__dict__", "import_module"})
# Decorators that only wrap or mark the function where it is defined, storing it nowhere else.
_PLAIN_DECORATORS = frozenset(
    {
        "staticmethod",
        "classmethod",
        "property",
        "wraps",
        "no_grad",
        "inference_mode",
        "enable_grad",
        "compile",
        "disable",
        "ignore",
        "unused",
        "dataclass",
        "lru_cache",
        "cache",
        "override",
        "final",
    }
)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _walk_import_time(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``node`` that run when the module is imported: not function or lambda
    bodies (their decorators, defaults and annotations do run)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, _FUNCS):
            stack += n.decorator_list + [n.args] + ([n.returns] if n.returns else [])
        elif isinstance(n, ast.Lambda):
            stack.append(n.args)
        else:
            stack += list(ast.iter_child_nodes(n))


def _bound(stmt: ast.stmt) -> set[str]:
    """The module-level names a top-level statement binds (defs inside ``if``/``try`` too)."""
    out: set[str] = set()
    for node in _walk_import_time(stmt):
        if isinstance(node, (*_FUNCS, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
    # A class body's names are its own, not the module's.
    if isinstance(stmt, ast.ClassDef):
        out = {stmt.name}
    return out


def _loads(nodes: Iterable[ast.AST]) -> set[str]:
    return {n.id for n in nodes if isinstance(n, ast.Name)}


def _is_alias(stmt: ast.stmt) -> bool:
    """``a = b`` or ``a, b = c, d``: a changed name given another name, nothing run."""
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
        return False
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    simple = (ast.Name, ast.Attribute, ast.Tuple, ast.List)
    names = all(
        isinstance(t, ast.Name)
        or (isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts))
        for t in targets
    )
    return names and all(isinstance(n, (*simple, ast.Load)) for n in ast.walk(stmt.value))


def _dynamic(tree: ast.Module) -> bool:
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id in _DYNAMIC:
            return True
        if isinstance(n, ast.Attribute) and n.attr in _DYNAMIC_ATTRS:
            return True
        if isinstance(n, _FUNCS) and n.name == "__getattr__":
            return True
    return False


def _plain_decorators(node: ast.AST) -> bool:
    for d in getattr(node, "decorator_list", []):
        core = d.func if isinstance(d, ast.Call) else d
        name = core.attr if isinstance(core, ast.Attribute) else getattr(core, "id", "")
        if name not in _PLAIN_DECORATORS:
            return False
    return True


def closure(tree: ast.Module, changed: set[str]) -> set[str] | None:
    """``changed`` with every module-level name whose definition uses one of them,
    transitively. None when a changed name is used by code that runs at import (other than
    giving it another name) or the module looks names up dynamically: anything may be reached."""
    if _dynamic(tree):
        return None
    changed = set(changed)
    stmts = [(s, _bound(s), _loads(_walk_import_time(s)), _loads(ast.walk(s))) for s in tree.body]
    grew = True
    while grew:
        grew = False
        for stmt, bound, at_import, used in stmts:
            if at_import & changed and not _is_alias(stmt):
                return None
            if used & changed and not bound <= changed:
                changed |= bound
                grew = True
    return changed


def changed_names(source: str, start: int, end: int) -> set[str] | None:
    """The module-level names whose code changes when lines start..end of ``source`` change,
    with every name that uses them. None: the lines run at import, or anything may be reached."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    seeds: set[str] = set()
    for stmt in tree.body:
        if stmt.lineno <= end and start <= (stmt.end_lineno or stmt.lineno):
            inside = [
                n
                for n in ast.walk(stmt)
                if isinstance(n, _FUNCS)
                and n.body[0].lineno <= start
                and end <= (n.body[-1].end_lineno or n.body[-1].lineno)
            ]
            # Only a function body runs when called; the function the edit is in, and the
            # top-level definition around it, must store themselves nowhere else.
            if not inside or not all(_plain_decorators(n) for n in [stmt, *inside]):
                return None
            seeds |= _bound(stmt)
    if not seeds:
        return None
    try:
        return closure(tree, seeds)
    except RecursionError:
        return None


@dataclass(frozen=True)
class _Module:
    dotted: str
    stem: str

    @classmethod
    def of(cls, path: str, root: Path) -> _Module:
        p = Path(os.path.realpath(path))
        try:
            parts = list(p.relative_to(root).with_suffix("").parts)
        except ValueError:
            parts = [p.stem]
        if parts and parts[-1] == "__init__":  # a package: imported by its folder's name
            parts = parts[:-1] or [p.parent.name]
        return cls(".".join(parts), parts[-1])

    def named(self, name: str) -> bool:
        return name in (self.dotted, self.stem) or name.endswith(f".{self.stem}")


def _reached(tree: ast.Module, mod: _Module, changed: set[str] | None) -> set[str] | None:
    """The local names through which a file (``tree``) reaches ``changed`` of ``mod``: the
    names its top-level statements bind around such an import (empty: it does not reach it;
    None: it reaches everything)."""
    seeds: set[str] = set()
    for stmt in tree.body:
        for node in ast.walk(stmt):
            hit: bool | None = False
            if isinstance(node, ast.Import):
                hit = any(
                    mod.named(a.name) or mod.dotted.startswith(f"{a.name}.") for a in node.names
                )
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if any(mod.named(f"{base}.{a.name}" if base else a.name) for a in node.names):
                    hit = True  # the module object
                elif base and mod.named(base):
                    names = {a.name for a in node.names}
                    if "*" in names:
                        return None
                    hit = changed is None or bool(names & changed)
                    if hit and stmt is node:
                        # At the top: only the changed names it binds are reached.
                        seeds |= {
                            a.asname or a.name
                            for a in node.names
                            if changed is None or a.name in changed
                        }
                        continue
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                hit = mod.named(node.value)  # importlib.import_module("models.helpers")
            if hit:
                seeds |= _bound(stmt) or {"<module>"}
    return seeds


def importers(
    root: Path, excludes: Iterable[str], edited: str, lines: tuple[int, int], *, skip: str
) -> list[str]:
    """The workspace files other than ``skip`` (and ``edited``) whose code can run lines
    ``lines`` of ``edited``, relative to ``root``."""
    try:
        changed: set[str] | None = changed_names(read_source(edited).text, *lines)
    except (WriteError, ValueError):
        changed = None
    files: dict[str, tuple[Path, ast.Module | None, str]] = {}
    for path in iter_python_files([root], list(excludes)):
        real = os.path.realpath(path)
        if real == os.path.realpath(edited) or real in files:
            continue
        try:
            text = read_source(path).text
        except (WriteError, ValueError):
            continue
        try:
            tree: ast.Module | None = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        files[real] = (path, tree, text)
    # Modules whose changed names are known, worked through until nothing new is reached.
    todo: list[tuple[_Module, set[str] | None]] = [(_Module.of(edited, root), changed)]
    reached: dict[str, set[str] | None] = {}
    while todo:
        mod, names = todo.pop()
        for real, (path, tree, text) in files.items():
            if tree is None:
                # Python here cannot parse it (newer syntax): named, it counts.
                local: set[str] | None = {"<module>"} if mod.stem in text else set()
            else:
                try:
                    local = _reached(tree, mod, names)
                except RecursionError:
                    local = None
            if local is not None and not local:
                continue
            if tree is not None and local is not None:
                try:
                    local = closure(tree, local)
                except RecursionError:
                    local = None
            before = reached.get(real, set())
            if real in reached and (before is None or (local is not None and local <= before)):
                continue
            reached[real] = None if local is None or before is None else local | before
            todo.append((_Module.of(str(path), root), reached[real]))
    skip_real = os.path.realpath(skip)
    out = []
    for real in reached:
        if real == skip_real:
            continue
        try:
            out.append(str(Path(real).relative_to(root)))
        except ValueError:
            out.append(real)
    return sorted(out)
