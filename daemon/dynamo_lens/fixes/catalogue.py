"""Rewrites that can remove a graph break, proposed from the break's finding and the source of
the file it sits in. Torch-free: nothing here is offered as verified; the worker runs both
versions and decides (worker/verify.py).

Each rule matches one code pattern at the break's line, whatever torch's wording:

- ``guard-output``: a ``print``, a logger call or ``warnings.warn`` as a statement runs only in
  eager, under ``if not torch.compiler.is_compiling():``. Exact: no tensor value changes.
- ``torch-where``: ``if <tensor condition>: x = a`` (optionally ``else: x = b``) becomes
  ``x = torch.where(<condition>, a, x or b)``: both branches are computed and one is selected.
  Exact in value; a rebinding that changes a tensor's kind (a buffer, a parameter) can still add
  a recompile, which verification measures.

- ``ignore-logger``: a break torch reports inside a library's logger call (transformers'
  ``logger.warning_once``) gets, in the user's file, the documented escape hatch after its
  imports: ``torch._dynamo.config.ignore_logger_methods.add(logging.Logger.<method>)``. Torch
  then drops those calls while compiling. Exact: no tensor value changes. A torch without the
  setting fails verification, so the rewrite is not offered there.

- ``capture-setting``: where torch's own hint for the break names ``capture_scalar_outputs``
  or ``capture_dynamic_output_shape_ops`` (``.item()``, ``.tolist()``, ``nonzero``-like ops,
  in the user's code or a library's), that setting after the file's imports. Module-wide, as
  torch offers it: ``torch._dynamo.config.patch`` as a decorator is itself a graph break
  (GB0142). Whatever the value then flows into (a Python ``if``) may break again: verification
  decides.

A break outside the workspace gets no rewrite: the user's files are the only ones edited.
"""

from __future__ import annotations

import ast
import difflib
import linecache
import re
from dataclasses import dataclass

from ..findings import Finding, Kind

_LOGGER_METHODS = {
    "debug",
    "info",
    "warning",
    "warn",
    "error",
    "exception",
    "critical",
    "log",
    "warning_once",
    "info_once",
}


_MODULE_WIDE = {"ignore-logger", "capture-setting"}


@dataclass(frozen=True)
class Rewrite:
    """Lines ``start``..``end`` (1-based, inclusive) of ``path`` replaced by ``text``."""

    rule: str
    title: str
    path: str
    start: int
    end: int
    text: str  # whole lines, each ending in a newline
    exact: bool  # outputs must be bitwise equal (else within the dtype's tolerance)

    @property
    def module_wide(self) -> bool:
        """A setting at import: it changes every target of the file, so it is verified
        against each of them, not only those that reported the break."""
        return self.rule in _MODULE_WIDE

    def apply(self, source: str) -> str:
        lines = source.splitlines(keepends=True)
        return "".join([*lines[: self.start - 1], self.text, *lines[self.end :]])

    @property
    def delta(self) -> int:
        return self.text.count("\n") - (self.end - self.start + 1)

    def new_line(self, old: int) -> int | None:
        """Where original line ``old`` sits after the rewrite; None inside the replaced lines."""
        if old < self.start:
            return old
        if old > self.end:
            return old + self.delta
        return None

    def diff(self, source: str, label: str) -> str:
        return "".join(
            difflib.unified_diff(
                source.splitlines(keepends=True),
                self.apply(source).splitlines(keepends=True),
                f"a/{label}",
                f"b/{label}",
            )
        )


def _imports_torch(tree: ast.Module) -> bool:
    return any(
        isinstance(n, ast.Import) and any(a.name == "torch" and a.asname is None for a in n.names)
        for n in tree.body
    )


def _statement_at(tree: ast.Module, line: int) -> ast.stmt | None:
    """The innermost statement that starts on ``line``."""
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or node.lineno != line:
            continue
        if best is None or node.col_offset >= best.col_offset:
            best = node
    return best


def _is_output_call(node: ast.stmt) -> bool:
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    func = node.value.func
    if isinstance(func, ast.Name):
        return func.id == "print"
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id == "warnings":
            return func.attr == "warn"
        return func.attr in _LOGGER_METHODS
    return False


def _lines(source: str, node: ast.stmt) -> list[str]:
    lines = source.splitlines(keepends=True)
    return lines[node.lineno - 1 : (node.end_lineno or node.lineno)]


def _guard_output(source: str, node: ast.stmt, path: str) -> Rewrite | None:
    if not _is_output_call(node):
        return None
    body = _lines(source, node)
    first = body[0]
    indent = first[: len(first) - len(first.lstrip())]
    last = body[-1].rstrip("\r\n")
    if node.col_offset != len(indent) or node.end_col_offset != len(last.split("#")[0].rstrip()):
        return None  # the statement shares a line with another (``a; print(x)``)
    text = f"{indent}if not torch.compiler.is_compiling():\n" + "".join(
        ("    " + ln if ln.strip() else ln) for ln in body
    )
    return Rewrite(
        "guard-output",
        "Run the output call only in eager (torch.compiler.is_compiling())",
        path,
        node.lineno,
        node.end_lineno or node.lineno,
        text,
        exact=True,
    )


def _single_assign(body: list[ast.stmt]) -> tuple[str, ast.expr] | None:
    if len(body) != 1:
        return None
    s = body[0]
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
        return s.targets[0].id, s.value
    return None


def _torch_where(source: str, node: ast.stmt, path: str) -> Rewrite | None:
    if not isinstance(node, ast.If):
        return None
    then = _single_assign(node.body)
    if then is None:
        return None
    name, value = then
    if node.orelse:
        other = _single_assign(node.orelse)
        if other is None or other[0] != name:
            return None
        alt = ast.get_source_segment(source, other[1])
    else:
        alt = name
    cond = ast.get_source_segment(source, node.test)
    val = ast.get_source_segment(source, value)
    if cond is None or val is None or alt is None or "\n" in cond + val + alt:
        return None
    first = _lines(source, node)[0]
    indent = first[: len(first) - len(first.lstrip())]
    end = node.end_lineno or node.lineno
    # A comment on the ``if`` line stays with the new line.
    after = first.rstrip("\r\n")[node.test.end_col_offset or 0 :]
    comment = "  " + after[after.index("#") :] if "#" in after else ""
    text = f"{indent}{name} = torch.where({cond}, {val}, {alt}){comment}\n"
    return Rewrite(
        "torch-where",
        "Select with torch.where instead of branching on a tensor",
        path,
        node.lineno,
        end,
        text,
        exact=True,
    )


RULES = (_guard_output, _torch_where)

# The library's source line where torch broke: ``<name>.<method>(`` (a call may span lines).
_LOGGER_CALL = re.compile(r"^\s*[A-Za-z_][\w.()]*\.(\w+)\(")


def _ignore_logger(finding: Finding, source: str, tree: ast.Module) -> Rewrite | None:
    if "library" not in finding.data or not finding.stack:
        return None
    origin = finding.stack[-1]
    # torch 2.8 gives library frames no source text: read the line (reading, never writing).
    m = _LOGGER_CALL.match(origin.code or linecache.getline(origin.path, origin.line))
    if m is None or m.group(1) not in _LOGGER_METHODS:
        return None
    method = f"logging.Logger.{m.group(1)}"
    return _setting_after_imports(
        "ignore-logger",
        f"Let torch drop {method} calls while compiling (ignore_logger_methods)",
        finding.path,
        source,
        tree,
        f"torch drops {method} calls while compiling, instead of breaking the graph",
        [f"torch._dynamo.config.ignore_logger_methods.add({method})"],
        needs_logging=True,
    )


# Settings torch's own hint for a break names (the registry's text, not ours): with them torch
# traces the value (an unbacked symbol) or the data-dependent shape instead of breaking.
_CAPTURE_SETTINGS = ("capture_scalar_outputs", "capture_dynamic_output_shape_ops")


def _capture_setting(finding: Finding, source: str, tree: ast.Module) -> Rewrite | None:
    said = " ".join([finding.message, finding.explanation, *finding.hints])
    names = [n for n in _CAPTURE_SETTINGS if n in said]
    if not names:
        return None
    return _setting_after_imports(
        "capture-setting",
        "Set " + ", ".join(f"torch._dynamo.config.{n} = True" for n in names) + " (module-wide)",
        finding.path,
        source,
        tree,
        "torch traces data-dependent values and shapes instead of breaking the graph "
        "(module-wide: every compile after this import)",
        [f"torch._dynamo.config.{n} = True" for n in names],
        needs_logging=False,
    )


def _setting_after_imports(
    rule: str,
    title: str,
    path: str,
    source: str,
    tree: ast.Module,
    why: str,
    settings: list[str],
    *,
    needs_logging: bool,
) -> Rewrite | None:
    """``settings`` (statements) inserted after the file's imports, with ``why`` above them."""
    if all(s in source for s in settings):
        return None  # already there: torch still breaks, so this is not the fix
    head = _header_imports(tree)
    if not head:
        return None
    last = head[-1].end_lineno or head[-1].lineno
    line = source.splitlines(keepends=True)[last - 1]
    if not line.endswith("\n"):
        line += "\n"
    has_logging = any(
        isinstance(n, ast.Import) and any(a.name == "logging" and a.asname is None for a in n.names)
        for n in head
    )
    text = (
        line
        + ("import logging\n" if needs_logging and not has_logging else "")
        + f"\n# {why}\n"
        + "".join(f"{s}\n" for s in settings)
    )
    return Rewrite(rule, title, path, last, last, text, exact=True)


def _header_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The module-level imports before its first function or class (a ``sys.path`` line may
    sit between them): the setting goes after the last, where torch and the library are
    imported."""
    out: list[ast.Import | ast.ImportFrom] = []
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            out.append(n)
    return out


def propose(finding: Finding, source: str, in_workspace: bool) -> list[Rewrite]:
    """The rewrites the catalogue has for ``finding`` in ``source`` (its file's text)."""
    if finding.kind != Kind.GRAPH_BREAK or not in_workspace:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    if not _imports_torch(tree):
        return []
    node = _statement_at(tree, finding.line)
    found = [rule(source, node, finding.path) for rule in RULES] if node is not None else []
    found += [_ignore_logger(finding, source, tree), _capture_setting(finding, source, tree)]
    out = []
    for rw in found:
        if rw is not None:
            try:
                ast.parse(rw.apply(source))
            except SyntaxError:
                continue  # never offer an edit that breaks the file
            out.append(rw)
    return out
