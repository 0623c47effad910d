"""Stable fingerprints for findings: the identity a baseline, ``diff`` and SARIF's
``partialFingerprints`` match on.

A fingerprint must survive what does not change the finding: lines moving, unrelated code
changing, reformatting. So it is made of the workspace-relative path, the kind and graph-break
id, the qualified name of the enclosing function, the finding's own statement normalised (its
syntax tree printed back: spacing, quotes, comments and line wrapping do not count), the device,
and an occurrence index among findings that agree on all of these. For a recompile, the guard's
kind and variable are in it too (several guards can sit on one line). The line number is not.
Torch-free and LSP-free: the CLI, the gate and the editor compute the same value.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from ..findings import Finding
from ..texts.locate import MAX_LIBRARY_BYTES, read_regular

VERSION = "dynamoLens/v1"  # SARIF partialFingerprints key: a new recipe gets a new key


def relative(path: str, root: Path) -> str:
    """``path`` relative to ``root`` in POSIX form; a file outside keeps its absolute path."""
    try:
        rel = Path(os.path.relpath(path, root))
    except ValueError:
        return Path(path).as_posix()
    return Path(path).as_posix() if rel.parts[:1] == ("..",) else rel.as_posix()


@lru_cache(maxsize=256)
def _parsed(path: str, mtime_ns: int, size: int) -> ast.Module | None:
    # Keyed by mtime and size too: the same path edited between two calls is parsed again.
    # Paths come from traces made anywhere: a FIFO or a device would block a plain open().
    data = read_regular(path, MAX_LIBRARY_BYTES)
    if data is None:
        return None
    try:
        return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _tree(path: str) -> ast.Module | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _parsed(path, st.st_mtime_ns, st.st_size)


def _header(node: ast.stmt) -> str:
    """A compound statement by its own line's part: ``if <test>``, ``for <t> in <it>``, a
    ``def``'s signature; the body is other statements."""
    if isinstance(node, (ast.If, ast.While)):
        return f"{type(node).__name__.lower()} {ast.unparse(node.test)}"
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return f"for {ast.unparse(node.target)} in {ast.unparse(node.iter)}"
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return "with " + ", ".join(ast.unparse(i) for i in node.items)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return f"def {node.name}({ast.unparse(node.args)})"
    if isinstance(node, ast.ClassDef):
        return f"class {node.name}"
    if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
        return "try"
    if isinstance(node, ast.Match):
        return f"match {ast.unparse(node.subject)}"
    return ast.unparse(node)


_COMPOUND = (
    ast.If,
    ast.While,
    ast.For,
    ast.AsyncFor,
    ast.With,
    ast.AsyncWith,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Try,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
    ast.Match,
)


def locate(tree: ast.Module, line: int) -> tuple[str, str]:
    """(qualified name of the function or class around ``line``, ``<module>`` at the top;
    the normalised text of the innermost statement on ``line``, "" when none is)."""
    scope: list[str] = []
    stmt: ast.stmt | None = None
    body: list[ast.stmt] = tree.body
    while True:
        here = next((s for s in body if _start(s) <= line <= (s.end_lineno or s.lineno)), None)
        if here is None:
            break
        stmt = here
        if not isinstance(here, _COMPOUND):
            break
        if isinstance(here, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope.append(here.name)
            # Its decorators and signature (where torch puts a guard on an argument) are the
            # function's own, as the header.
            if line < (_start(here.body[0]) if here.body else here.lineno):
                break
        inner = [
            s
            for block in ("body", "orelse", "finalbody", "handlers", "cases")
            for s in _stmts(getattr(here, block, []))
        ]
        # A line in the header (an ``if``'s test) is the compound statement itself.
        if not any(_start(s) <= line <= (s.end_lineno or s.lineno) for s in inner):
            break
        body = inner
    text = (
        ""
        if stmt is None
        else (_header(stmt) if isinstance(stmt, _COMPOUND) else ast.unparse(stmt))
    )
    return ".".join(scope) or "<module>", text


def _start(node: ast.stmt) -> int:
    """A statement's first line: a decorated definition starts at its first decorator."""
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])


def _stmts(items: list[object]) -> list[ast.stmt]:
    """The statements of a block, with those inside ``except`` handlers and ``case`` arms."""
    out: list[ast.stmt] = []
    for item in items:
        if isinstance(item, (ast.ExceptHandler, ast.match_case)):
            out += item.body
        elif isinstance(item, ast.stmt):
            out.append(item)
    return out


@lru_cache(maxsize=64)
def _cell_trees(path: str, mtime_ns: int, size: int) -> tuple[ast.Module | None, ...]:
    """A notebook's cells, parsed as the analysis ran them (IPython syntax made Python)."""
    from ..notebooks.cells import NotebookError, read_cells
    from ..notebooks.program import python_of

    try:
        cells = read_cells(Path(path))
    except NotebookError:
        return ()
    out: list[ast.Module | None] = []
    for c in cells:
        try:
            out.append(ast.parse(python_of(c.source)) if c.kind == "code" else None)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            out.append(None)
    return tuple(out)


def _tree_of(f: Finding) -> ast.Module | None:
    """The source ``f``'s line is in: its file, or its notebook cell."""
    if f.cell is None:
        return _tree(f.path)
    try:
        st = os.stat(f.path)
    except OSError:
        return None
    trees = _cell_trees(f.path, st.st_mtime_ns, st.st_size)
    return trees[f.cell - 1] if 0 < f.cell <= len(trees) else None


def _parts(f: Finding, root: Path) -> tuple[str, ...]:
    # A cell's position is not in the identity: a cell inserted above must not make a
    # baseline's finding new. Its function and statement text are.
    tree = _tree_of(f)
    function, text = locate(tree, f.line) if tree is not None else ("", "")
    if not text:
        # No source to read (a trace from elsewhere, a deleted file): what torch said instead.
        function, text = function or "", " ".join(f.message.split())
    return (
        relative(f.path, root),
        f.kind.value,
        f.gb_id or str(f.data.get("gb_type", "")),
        # A recompile's guard: several can sit on one line (a def's arguments).
        str(f.data.get("guard_kind", "")),
        str(f.data.get("variable", "")),
        str(f.data.get("fallback", "")),
        function,
        text,
        f.device or "",
    )


def assign(findings: Iterable[Finding], root: Path) -> None:
    """Set ``fingerprint`` on each finding. Findings that agree on everything else are told
    apart by their order in the file (line, then column)."""
    items = sorted(findings, key=lambda f: (f.path, f.cell or 0, f.line, f.column))
    seen: Counter[tuple[str, ...]] = Counter()
    for f in items:
        parts = _parts(f, root)
        occurrence = seen[parts]
        seen[parts] += 1
        raw = json.dumps([*parts, occurrence], ensure_ascii=False)
        f.fingerprint = hashlib.sha256(raw.encode()).hexdigest()[:32]
