"""Which other workspace files an edit of a helper module reaches.

A fix verified for one file's targets may edit a module other files import too. Those files'
targets run the edited code unverified, so the fix is not applied on their behalf. But a file
that imports only names the edit leaves alone (``from models.common import RMSNorm`` when the
edit is inside ``center_if_shifted``) runs none of the changed code: it is not counted.

The analysis is by the module's own source and is conservative: an edit that runs at import
(module level, a class body, a default value or a decorator), an import of the module object,
``import *`` and dynamic lookups (``globals()``, ``getattr`` with a computed name, ``eval``)
all count as reaching the importer.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from pathlib import Path

from .filewrite import WriteError, read_source
from .source import iter_python_files

_DYNAMIC = frozenset({"globals", "vars", "eval", "exec", "getattr", "__import__"})


def _bound(stmt: ast.stmt) -> set[str]:
    """The module-level names a top-level statement binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    out: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
    return out


def _in_function_body(stmt: ast.stmt, start: int, end: int) -> bool:
    """Whether lines start..end lie inside the body of a function defined in ``stmt`` (code
    that runs when called, not at import)."""
    for node in ast.walk(stmt):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            body = node.body if isinstance(node.body, list) else [node.body]
            first, last = body[0], body[-1]
            if first.lineno <= start and end <= (last.end_lineno or last.lineno):
                return True
    return False


def changed_names(source: str, start: int, end: int) -> set[str] | None:
    """The module-level names whose code changes when lines start..end of ``source`` change,
    with every name whose definition uses one of them, transitively. None: the lines run at
    import, or the module looks names up dynamically, so any importer is reached."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    changed: set[str] = set()
    for stmt in tree.body:
        if stmt.lineno <= end and start <= (stmt.end_lineno or stmt.lineno):
            if not _in_function_body(stmt, start, end):
                return None
            changed |= _bound(stmt)
    if not changed:
        return None
    uses: list[tuple[set[str], set[str]]] = []
    for stmt in tree.body:
        names = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
        if names & _DYNAMIC:
            return None
        uses.append((_bound(stmt), names))
    grew = True
    while grew:
        grew = False
        for bound, names in uses:
            if names & changed and not bound <= changed:
                changed |= bound
                grew = True
    return changed


def _is_module(name: str, dotted: str, stem: str) -> bool:
    return name in (dotted, stem) or name.endswith(f".{stem}")


def reaches(tree: ast.Module, dotted: str, stem: str, changed: set[str] | None) -> bool:
    """Whether a file (``tree``) imports, from module ``dotted`` (file stem ``stem``), the
    module itself, everything, or one of ``changed`` (None: any import of it)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(_is_module(a.name, dotted, stem) for a in node.names):
                return True
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            # ``from pkg import helpers``: the module object, any of its names.
            if any(
                _is_module(f"{base}.{a.name}" if base else a.name, dotted, stem) for a in node.names
            ):
                return True
            if base and _is_module(base, dotted, stem):
                imported = {a.name for a in node.names}
                if changed is None or "*" in imported or imported & changed:
                    return True
    return False


def importers(
    root: Path, excludes: Iterable[str], edited: str, lines: tuple[int, int], *, skip: str
) -> list[str]:
    """The workspace files other than ``skip`` (and ``edited``) that lines ``lines`` of
    ``edited`` reach through their imports, relative to ``root``."""
    stem = Path(edited).stem
    try:
        dotted = ".".join(Path(os.path.realpath(edited)).relative_to(root).with_suffix("").parts)
    except ValueError:
        dotted = stem
    try:
        changed = changed_names(read_source(edited).text, *lines)
    except (WriteError, ValueError):
        changed = None
    found = []
    for path in iter_python_files([root], list(excludes)):
        if os.path.realpath(path) in (os.path.realpath(skip), os.path.realpath(edited)):
            continue
        try:
            tree = ast.parse(read_source(path).text)
        except (WriteError, SyntaxError, ValueError):
            continue
        if reaches(tree, dotted, stem, changed):
            try:
                found.append(str(Path(path).resolve().relative_to(root)))
            except ValueError:
                found.append(str(path))
    return found
