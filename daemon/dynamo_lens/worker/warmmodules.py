"""Workspace modules kept warm between jobs: after an edit, the worker executes the edited
file again, and the workspace modules whose result could differ, not the whole import graph.

A workspace module is kept only when a fresh import could not give anything else:

- its file holds the bytes it was executed from (read and hashed as it was executed);
- its code can hold no state: at module level (and in its classes) only imports, definitions
  with plain decorators and immutable defaults, immutable constants, loggers, and ``if`` /
  ``try`` blocks of those; no ``global`` statement anywhere. A module with a cache, a registry
  or code that runs at import is executed again every time, as before;
- nothing rebound its names, its classes' or its functions' attributes since it was executed
  (another module's ``config.DEBUG = True`` at import; a test edit then removes that line);
- it imports no module that is executed again (``from helpers import f`` holds the old ``f``).

Everything else is forgotten and imported afresh, as every workspace module was before.
Records are made by the loader that executes workspace files (``install``, in the worker
process only): a module it did not execute (a shadow's, a notebook's program) has none, and is
never kept.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import os
import sys
import types
from dataclasses import dataclass
from typing import Any

from ..static.reach import PLAIN_DECORATORS
from ..texts.locate import Workspace
from ..texts.source import content_hash, file_hash
from .usercode import workspace_modules

# Decorators that only wrap (static/reach.py's), less a cache (lru_cache, cache): state.
_PURE_DECORATORS = PLAIN_DECORATORS - {"lru_cache", "cache"}


@dataclass(frozen=True)
class _Record:
    file: str
    module_id: int
    digest: str  # content_hash of the bytes executed
    pure: bool
    imports: frozenset[str]  # the modules its module-level code imports, by absolute name
    state: tuple[Any, ...]  # its names' bindings when executed (``_state``)


_RECORDS: dict[str, _Record] = {}
KEPT: list[str] = []  # the modules the last purge kept, for the job's reply
_WORKSPACE: list[Workspace] = []  # the workspace of the job running now
_PATH: list[list[str]] = []  # sys.path when the last purge ran
_PARSED: dict[str, tuple[bool, list[tuple[int, str, tuple[str, ...]]], list[str]]] = {}
_CODE = (
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
)


def install() -> None:
    """Records each workspace module as the import system executes it (the worker only)."""
    loader = importlib.machinery.SourceFileLoader
    if getattr(loader.exec_module, "_dynamo_lens", False):
        return
    real = loader.exec_module

    def exec_module(self: importlib.machinery.SourceFileLoader, module: types.ModuleType) -> None:
        path = str(self.path)
        ws = _WORKSPACE[0] if _WORKSPACE else None
        if ws is None or not ws.contains(path):
            real(self, module)
            return
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            data = None
        real(self, module)
        if data is not None:
            _record(module, path, data)

    exec_module._dynamo_lens = True  # type: ignore[attr-defined]
    loader.exec_module = exec_module  # type: ignore[method-assign, assignment]


def _record(module: types.ModuleType, path: str, data: bytes) -> None:
    digest = content_hash(data)
    if digest not in _PARSED:
        if len(_PARSED) > 4096:
            _PARSED.clear()
        _PARSED[digest] = _parse(data)
    pure, imports, aliases = _PARSED[digest]
    # A name bound to another's value must hold code or a module, not a value read at import.
    values = vars(module)
    pure = pure and all(isinstance(values.get(a), _CODE) for a in aliases)
    package = module.__package__ or ""
    names: set[str] = set()
    for level, name, froms in imports:
        try:
            base = importlib.util.resolve_name("." * level + name, package) if level else name
        except (ImportError, ValueError):
            pure = False  # a relative import it cannot resolve: assume the worst
            continue
        names.add(base)
        names.update(f"{base}.{f}" for f in froms)
    _RECORDS[module.__name__] = _Record(
        path, id(module), digest, pure, frozenset(names), _state(module)
    )


def purge(ws: Workspace, path: str, fresh: bool) -> int:
    """Forgets the workspace modules that a fresh import could give differently; the number
    kept. ``path`` is the file about to be imported: it goes when ``fresh`` (its bytes are new,
    or a discovery), and so does every module not warm. Else (the next job for the same bytes)
    only a module whose file changed goes. Either way, what imports a forgotten module goes."""
    modules = workspace_modules(ws)
    # User code changed sys.path since the last job began (``sys.path.insert`` at import): a
    # fresh import may find another file for a name; nothing is kept.
    moved = _PATH[:1] != [list(sys.path)]
    _PATH[:] = [list(sys.path)]

    def stale(name: str, file: str) -> bool:
        if moved:
            return True
        if os.path.realpath(file) == path:
            return fresh
        return not _warm(name, file) if fresh else _changed(name, file)

    gone = {name for name, file in modules if stale(name, file)}
    kept = [name for name, _ in modules if name not in gone]
    changed = True
    while changed:  # what imports a forgotten module goes too, and what imports that
        changed = False
        for name in list(kept):
            rec = _RECORDS.get(name)
            if (
                rec is None
                or any(_related(i, g) for i in rec.imports for g in gone)
                or _subclassed(sys.modules.get(name), kept)
            ):
                gone.add(name)
                kept.remove(name)
                changed = True
    for name in gone:
        sys.modules.pop(name, None)
        _RECORDS.pop(name, None)
    KEPT[:] = sorted(kept)
    return len(kept)


def begin(ws: Workspace) -> None:
    """The workspace whose modules the loader records during this job."""
    _WORKSPACE[:] = [ws]
    KEPT.clear()


def _warm(name: str, path: str) -> bool:
    rec = _RECORDS.get(name)
    module = sys.modules.get(name)
    if rec is None or module is None or not rec.pure:
        return False
    if rec.file != path or rec.module_id != id(module) or rec.state != _state(module):
        return False
    return _digest(path) == rec.digest


def _subclassed(module: types.ModuleType | None, kept: list[str]) -> bool:
    """A class of the module has a subclass from a module that goes (or went): a fresh import
    would have none of them (``Plugin.__subclasses__()`` read by an example)."""
    if module is None:
        return True
    for value in list(vars(module).values()):
        if isinstance(value, type) and value.__module__ == module.__name__:
            try:
                subs: list[type] = value.__subclasses__()
            except TypeError:
                continue
            if any(sub.__module__ not in (*kept, value.__module__) for sub in subs):
                return True
    return False


def _changed(name: str, path: str) -> bool:
    rec = _RECORDS.get(name)
    module = sys.modules.get(name)
    if rec is None or module is None or rec.file != path or rec.module_id != id(module):
        return True
    return _digest(path) != rec.digest


def _digest(path: str) -> str:
    return file_hash(path) or ""


def _related(a: str, b: str) -> bool:
    """One names the other or a package of it (``import pkg`` reaches ``pkg.sub``)."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _state(module: types.ModuleType) -> tuple[Any, ...]:
    """What a module's names are bound to, and its own classes' and functions' attributes, by
    identity. A package's submodules, set on it as they are imported, are not its state."""
    own = module.__name__
    out: list[Any] = []
    for key, value in sorted(vars(module).items()):
        if isinstance(value, types.ModuleType) and value.__name__.startswith(own + "."):
            continue
        if key.startswith("__") and not key.endswith("__"):
            # Dynamo's, in a module it compiled: ``__resume_at_96_6``, ``__builtins_dict___4``.
            continue
        out.append((key, id(value)))
        if isinstance(value, type | types.FunctionType) and value.__module__ == own:
            out.append(_attributes(value, own, 0))
    return tuple(out)


def _attributes(obj: type | types.FunctionType, own: str, depth: int) -> tuple[Any, ...]:
    """A class's or function's attributes by identity, its nested classes' and its methods'
    too, and a function's defaults (``f.__defaults__ = (2,)`` changes it)."""
    out: list[Any] = [(a, id(v)) for a, v in sorted(vars(obj).items())]
    if isinstance(obj, types.FunctionType):
        out.append((id(obj.__defaults__), id(obj.__kwdefaults__)))
    elif depth < 4:
        for a, v in sorted(vars(obj).items()):
            if isinstance(v, type | types.FunctionType) and v.__module__ == own:
                out.append((a, _attributes(v, own, depth + 1)))
    return tuple(out)


# ------------------------------------------------------------------------- the source's test
def _parse(data: bytes) -> tuple[bool, list[tuple[int, str, tuple[str, ...]]], list[str]]:
    """(whether the module can hold no state, its module-level imports as (level, module,
    names imported from it), the names it binds to another name's value: checked once run)."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return False, [], []
    imports: list[tuple[int, str, tuple[str, ...]]] = []
    aliases: list[str] = []
    pure = all(_pure(stmt, imports, aliases) for stmt in tree.body) and not any(
        isinstance(node, ast.Global | ast.Nonlocal) for node in ast.walk(tree)
    )
    return pure, imports, aliases


def _pure(
    stmt: ast.stmt,
    imports: list[tuple[int, str, tuple[str, ...]]],
    aliases: list[str] | None = None,
) -> bool:
    """Whether ``stmt`` leaves no state a later run could see; ``aliases`` (module level only)
    collects the names bound to another name's value (``Tensor = torch.Tensor``), whose values
    ``_record`` checks: a library's setting read at import (``FLAG = cfg.flag``) is state."""
    if isinstance(stmt, ast.Import):
        imports += [(0, a.name, ()) for a in stmt.names]
        return True
    if isinstance(stmt, ast.ImportFrom):
        imports.append((stmt.level, stmt.module or "", tuple(a.name for a in stmt.names)))
        return all(a.name != "*" for a in stmt.names)
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        args = stmt.args
        return all(_plain(d) for d in stmt.decorator_list) and all(
            _constant(d) for d in [*args.defaults, *(d for d in args.kw_defaults if d)]
        )
    if isinstance(stmt, ast.ClassDef):
        return all(_plain(d) for d in stmt.decorator_list) and all(
            _pure(s, []) and not isinstance(s, ast.Import | ast.ImportFrom) for s in stmt.body
        )
    if isinstance(stmt, ast.Assign | ast.AnnAssign):
        value = stmt.value
        names = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if not all(isinstance(n, ast.Name) for n in names):
            return False  # x.attr = ..., x[i] = ...: changes another object
        if value is None or _constant(value) or _logger(value):
            return True
        if aliases is not None and isinstance(value, ast.Name | ast.Attribute):
            aliases += [n.id for n in names if isinstance(n, ast.Name)]
            return True
        all_list = any(isinstance(n, ast.Name) and n.id == "__all__" for n in names)
        return all_list and isinstance(value, ast.List | ast.Tuple)
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Constant)  # a docstring
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.If):
        # `if __name__ == "__main__":` never runs on import; `if TYPE_CHECKING:` only imports.
        # Any other test reads state at import (a flag, a version, whether a file exists), and
        # so does a `try` around an import that may fail: the module runs again each time.
        if _main_guard(stmt.test):
            return all(_pure(s, imports, aliases) for s in stmt.orelse)
        checking = (
            isinstance(stmt.test, ast.Name | ast.Attribute)
            and (getattr(stmt.test, "id", None) or getattr(stmt.test, "attr", None))
            == "TYPE_CHECKING"
        )
        return checking and not stmt.orelse
    return False


def _plain(decorator: ast.expr) -> bool:
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    last = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return last in _PURE_DECORATORS


def _constant(node: ast.expr) -> bool:
    """A value no one can change and no state chose: a literal, a tuple of them, arithmetic."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Tuple):
        return all(_constant(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    if isinstance(node, ast.BinOp):
        return _constant(node.left) and _constant(node.right)
    return False


def _logger(node: ast.expr) -> bool:
    """``logging.getLogger(...)``: the logging module holds the logger, not this module."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "getLogger"
    )


def _main_guard(test: ast.expr) -> bool:
    """``if __name__ == "__main__":``"""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
        and isinstance(test.ops[0], ast.Eq)
    )
