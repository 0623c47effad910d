"""Reconcile instant static hints with what real torch runs found, for one file at a time.

The daemon shows static hints while the user types, and graph-break findings once a worker has
run the file's targets. This module decides which static hints stay visible:

- **confirmed**: a dynamic graph break is on the hint's line (or its stack passes through it).
  The real finding is shown instead, so the hint is hidden.
- **refuted**: the dynamic run covered the hint's function and found no break there. The hint
  was a false alarm and is hidden.

Verdicts are remembered per ``(path, function qualified name, hash of the function's text)``,
so they survive edits elsewhere in the file (hints are matched by their position relative to
the function) and lapse as soon as that function's own code changes: then the hint shows again
until the next dynamic run says otherwise. Pure Python, no LSP and no torch.
"""

from __future__ import annotations

import ast
import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from ..findings import Finding
from .model import function_span, source_lines, text_digest

CONFIRMED = "confirmed"
REFUTED = "refuted"


@dataclass(frozen=True)
class FunctionText:
    qualname: str
    start: int  # first line, decorators included
    end: int
    digest: str


def _norm(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


@functools.lru_cache(maxsize=64)
def function_hashes(source: str) -> dict[str, FunctionText]:
    """Qualified name (``Class.method``, ``outer.<locals>.inner``) -> its text's hash.

    Names follow Python's ``__qualname__``, as the static hints' ``data["function"]`` does.
    Unparsable source gives ``{}``.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    lines = source_lines(source)
    out: dict[str, FunctionText] = {}

    def visit(body: Iterable[ast.AST], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                q = f"{prefix}{node.name}"
                start, end = function_span(node)
                out.setdefault(q, FunctionText(q, start, end, text_digest(lines, start, end)))
                visit(node.body, f"{q}.<locals>.")
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")
            else:
                # Defs nested in if/try/with/for blocks keep the enclosing prefix.
                visit((c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)), prefix)

    visit(tree.body, "")
    return out


_HintKey = tuple[str, int, int, int, int]  # rule, line and end line relative to the def, columns


def _hint_key(h: Finding, start: int) -> _HintKey:
    return (
        str(h.data.get("rule", h.message)),
        h.line - start,
        h.column,
        h.end_line - start,
        h.end_column,
    )


class Reconciler:
    """Remembers, per function version, which static hints real runs confirmed or refuted.

    Thread-safe; all methods are cheap enough for the daemon's didChange path (the source is
    parsed once per distinct text and cached).
    """

    def __init__(self, versions_per_function: int = 4) -> None:
        # (path, qualname) -> {digest -> {hint key -> verdict}}, newest digest last.
        self._verdicts: dict[tuple[str, str], OrderedDict[str, dict[_HintKey, str]]] = {}
        self._versions = max(1, versions_per_function)
        self._lock = threading.Lock()

    # ---- updates ----------------------------------------------------------------------------
    def update_dynamic(
        self,
        path: str,
        source: str,
        dynamic_findings: Iterable[Finding],
        covered_functions: set[str] | None,
        static_hints: list[Finding] | None = None,
    ) -> None:
        """Record what a completed dynamic analysis of ``source`` found.

        ``dynamic_findings``: the run's findings (only ``graph_break`` ones are used; a break
        counts on its own line and on every line of this file its stack passes through).
        ``covered_functions``: qualified names of the functions whose code the run traced, e.g.
        the union of :func:`reachable_functions` over the targets that completed. ``None``
        means coverage is unknown: hints can then be confirmed but never refuted.
        ``static_hints``: the hints for ``source`` if already computed (else analysed here).
        """
        if static_hints is None:
            from .analyzer import analyze_source  # local: analyze imports nothing from here

            static_hints = analyze_source(source, path)
        norm = _norm(path)
        break_lines = _break_lines(norm, dynamic_findings)
        with self._lock:
            for h in static_hints:
                fn = str(h.data.get("function", ""))
                where = _function_of(h, source)
                if where is None:
                    continue
                start, digest = where
                if any(ln in break_lines for ln in range(h.line, h.end_line + 1)):
                    verdict = CONFIRMED
                elif covered_functions is not None and fn in covered_functions:
                    verdict = REFUTED
                else:
                    continue
                self._version(norm, fn, digest)[_hint_key(h, start)] = verdict

    def _version(self, norm: str, fn: str, digest: str) -> dict[_HintKey, str]:
        versions = self._verdicts.setdefault((norm, fn), OrderedDict())
        table = versions.get(digest)
        if table is None:
            table = versions[digest] = {}
            while len(versions) > self._versions:
                versions.popitem(last=False)
        versions.move_to_end(digest)
        return table

    def forget(self, path: str | None = None) -> None:
        """Drop what is known about ``path`` (or everything)."""
        with self._lock:
            if path is None:
                self._verdicts.clear()
                return
            norm = _norm(path)
            for key in [k for k in self._verdicts if k[0] == norm]:
                del self._verdicts[key]

    # ---- queries ----------------------------------------------------------------------------
    def verdict(self, path: str, source: str, hint: Finding) -> str | None:
        """``"confirmed"``, ``"refuted"`` or ``None`` (still a live hint)."""
        fn = str(hint.data.get("function", ""))
        where = _function_of(hint, source)
        if where is None:
            return None
        start, digest = where
        with self._lock:
            versions = self._verdicts.get((_norm(path), fn))
            table = versions.get(digest) if versions else None
            return table.get(_hint_key(hint, start)) if table else None

    def visible(self, path: str, source: str, static_hints: list[Finding]) -> list[Finding]:
        """The static hints to show for ``source``: those neither confirmed nor refuted."""
        norm = _norm(path)
        out: list[Finding] = []
        with self._lock:
            for h in static_hints:
                fn = str(h.data.get("function", ""))
                versions = self._verdicts.get((norm, fn))
                where = _function_of(h, source) if versions else None
                if versions and where is not None:
                    table = versions.get(where[1])
                    if table and _hint_key(h, where[0]) in table:
                        continue
                out.append(h)
        return out


def _function_of(h: Finding, source: str) -> tuple[int, str] | None:
    """(first line, digest) of the function a hint is in: from the hint itself (static hints
    carry them, so no second parse on the didChange path), else by parsing ``source``."""
    start, digest = h.data.get("function_start"), h.data.get("function_digest")
    if isinstance(start, int) and isinstance(digest, str):
        return start, digest
    ft = function_hashes(source).get(str(h.data.get("function", "")))
    return (ft.start, ft.digest) if ft is not None else None


def _break_lines(norm_path: str, findings: Iterable[Finding]) -> set[int]:
    lines: set[int] = set()
    for f in findings:
        # A fallback torch reports with a break id is a graph break too (the function then
        # runs eagerly): it confirms the hint on its line.
        if not f.is_break:
            continue
        if _norm(f.path) == norm_path:
            lines.update(range(f.line, max(f.line, f.end_line) + 1))
        for fr in f.stack:
            if fr.path and _norm(fr.path) == norm_path:
                lines.add(fr.line)
    return lines
