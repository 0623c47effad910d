"""Rewrites that can remove a graph break, proposed from the break's finding and the source of
the file it sits in. Torch-free: nothing here is offered as verified; the worker runs both
versions and decides (worker/verify.py).

Each rule matches one code pattern at the break's line, whatever torch's wording:

- ``guard-output``: a ``print``, a logger call or ``warnings.warn`` as a statement (or an
  ``if`` that only outputs) runs only in eager, under ``if not torch.compiler.is_compiling():``.
  Exact: no tensor value changes.
- ``torch-where``: ``if <tensor condition>: x = a`` (optionally ``else: x = b``) becomes
  ``x = torch.where(<condition>, a, x or b)``, and ``if c: return a`` then ``return b``
  becomes ``return torch.where(c, a, b)``: both sides are computed and one is selected. Exact
  in value; a rebinding that changes a tensor's kind (a buffer, a parameter) can still add a
  recompile, which verification measures.
- ``assert-async``: ``assert <tensor condition>`` and ``if <tensor condition>: raise E(msg)``
  become ``torch._assert_async``: the check stays, inside the graph. Exact in value; a failed
  check raises ``RuntimeError`` instead (on CUDA, a device-side assert), as the title says.

- ``nonstrict-trace``: the call of a helper of the same file that ``@torch.compiler.disable``
  keeps out of the graph, where the helper only computes (no side effect non-strict tracing
  would run once), gets ``@torch._dynamo.nonstrict_trace`` instead. Exact in eager.

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

# What a rewrite can be for: a graph break, and a frame torch then runs eagerly (a break in a
# loop makes torch skip the whole frame: the break's line is still the cause).
FIXABLE = frozenset({Kind.GRAPH_BREAK, Kind.FALLBACK})


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


def _whole_lines(source: str, node: ast.stmt, last: ast.stmt) -> bool:
    """Whether ``node``..``last`` fill their lines (no ``a; print(x)``): only whole lines are
    replaced."""
    lines = source.splitlines()
    first, end = lines[node.lineno - 1], lines[(last.end_lineno or last.lineno) - 1]
    return node.col_offset == len(first) - len(first.lstrip()) and last.end_col_offset == len(
        end.split("#")[0].rstrip()
    )


def _only_output(node: ast.stmt) -> bool:
    """An output call, or an ``if`` that does nothing but output (``if pad in ids:
    logger.warning(...)``): its test is computed only to decide what to say."""
    if isinstance(node, ast.If):
        return all(_only_output(s) for s in node.body + node.orelse)
    return _is_output_call(node)


def _guard_output(source: str, node: ast.stmt, path: str, tree: ast.Module) -> Rewrite | None:
    if not _only_output(node) or not _whole_lines(source, node, node):
        return None
    body = _lines(source, node)
    first = body[0]
    indent = first[: len(first) - len(first.lstrip())]
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


# Calls that answer with a Python bool, never a tensor: torch.where cannot select on them.
# (``t.any()`` is a tensor's method and answers with a tensor.)
_BOOL_BUILTINS = {"any", "all", "isinstance", "hasattr", "callable", "bool"}
_BOOL_TORCH = {"equal", "is_tensor", "is_floating_point", "is_complex"}
# Values torch.where cannot select between.
_CONTAINERS = (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)


def _python_bool(expr: ast.expr) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    if isinstance(func, ast.Name):
        return func.id in _BOOL_BUILTINS
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "torch"
        and func.attr in _BOOL_TORCH
    )


def _tensor_condition(source: str, expr: ast.expr) -> str | None:
    """``expr`` as one tensor expression: Python's ``not``, ``and`` and ``or`` ask a tensor for
    a bool (the break itself), so they become ``torch.logical_*``. None where an operand may be
    a Python value that guards the next (``m is not None and m.any()``): both sides would be
    computed, and the guard was there to stop that."""
    if _python_bool(expr):
        return None
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        inner = _tensor_condition(source, expr.operand)
        return None if inner is None else f"torch.logical_not({inner})"
    if isinstance(expr, ast.BoolOp):
        parts = []
        for v in expr.values:
            if isinstance(v, (ast.Name, ast.Constant, ast.Attribute)) or (
                isinstance(v, ast.Compare)
                and any(isinstance(o, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for o in v.ops)
            ):
                return None
            part = _tensor_condition(source, v)
            if part is None:
                return None
            parts.append(part)
        fn = "torch.logical_and" if isinstance(expr.op, ast.And) else "torch.logical_or"
        out = parts[0]
        for part in parts[1:]:
            out = f"{fn}({out}, {part})"
        return out
    return ast.get_source_segment(source, expr)


def _indent_and_comment(source: str, node: ast.stmt, head: ast.expr) -> tuple[str, str]:
    """The statement's indentation, and a comment after ``head`` on its first line (kept on
    the new line)."""
    first = _lines(source, node)[0]
    indent = first[: len(first) - len(first.lstrip())]
    after = first.rstrip("\r\n")[head.end_col_offset or 0 :]
    return indent, ("  " + after[after.index("#") :] if "#" in after else "")


def _following(tree: ast.Module, node: ast.stmt) -> ast.stmt | None:
    """The statement right after ``node`` in the same block."""
    for parent in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and node in block:
                i = block.index(node)
                return block[i + 1] if i + 1 < len(block) else None
    return None


def _torch_where(source: str, node: ast.stmt, path: str, tree: ast.Module) -> Rewrite | None:
    """``if c: x = a [else: x = b]`` becomes ``x = torch.where(c, a, x or b)``, and
    ``if c: return a`` followed by (or ``else:``) ``return b`` becomes
    ``return torch.where(c, a, b)``."""
    if not isinstance(node, ast.If):
        return None
    helpers = _helpers(source, tree, node)
    then = _single_assign(node.body[len(helpers) :])
    end = node.end_lineno or node.lineno
    after: ast.expr | None = None
    if then is not None:
        name, value = then
        if node.orelse:
            other = _single_assign(node.orelse)
            if other is None or other[0] != name:
                return None
            after = other[1]
            alt = ast.get_source_segment(source, after)
        else:
            alt = name
        head = f"{name} = "
    else:
        returned = _single_return(node.body)
        if returned is None:
            return None
        value = returned
        after = _single_return(node.orelse) if node.orelse else None
        if after is None and not node.orelse:
            nxt = _following(tree, node)
            after = _single_return([nxt]) if nxt is not None else None
            end = (nxt.end_lineno or nxt.lineno) if nxt is not None else end
        if after is None:
            return None
        alt = ast.get_source_segment(source, after)
        head = "return "
    cond = _tensor_condition(source, node.test)
    if isinstance(value, _CONTAINERS) or isinstance(after, _CONTAINERS):
        return None
    val = ast.get_source_segment(source, value)
    if cond is None or val is None or alt is None or "\n" in cond + val + alt:
        return None
    indent, comment = _indent_and_comment(source, node, node.test)
    text = "".join(f"{indent}{ast.get_source_segment(source, h)}\n" for h in helpers)
    text += f"{indent}{head}torch.where({cond}, {val}, {alt}){comment}\n"
    return Rewrite(
        "torch-where",
        "Select with torch.where instead of branching on a tensor",
        path,
        node.lineno,
        end,
        text,
        exact=True,
    )


def _helpers(source: str, tree: ast.Module, node: ast.If) -> list[ast.stmt]:
    """The one-line ``name = value`` statements that open the branch and that nothing outside
    it reads or writes (``clamp_value = torch.finfo(h.dtype).max - 1000``): computed
    unconditionally before the selection, they change nothing else."""
    scope = next(
        (
            f
            for f in ast.walk(tree)
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and node in ast.walk(f)
        ),
        None,
    )
    if scope is None:
        return []
    inside = {id(n) for s in node.body for n in ast.walk(s)}
    outside = {n.id for n in ast.walk(scope) if isinstance(n, ast.Name) and id(n) not in inside}
    out: list[ast.stmt] = []
    for s in node.body[:-1]:
        one = _single_assign([s])
        if one is None or one[0] in outside or s.lineno != s.end_lineno:
            break
        out.append(s)
    return out


def _single_return(body: list[ast.stmt]) -> ast.expr | None:
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return body[0].value
    return None


def _message(node: ast.expr | None, default: str) -> str:
    """A check's message: the string the code gave, or ``default`` (the code, as text). A
    message built at run time (an f-string of a shape) would be computed on every call."""
    if isinstance(node, ast.Call) and node.args:
        node = node.args[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return default


def _assert_async(source: str, node: ast.stmt, path: str, tree: ast.Module) -> Rewrite | None:
    """``assert c, msg`` and ``if c: raise E(msg)`` on a tensor become
    ``torch._assert_async(<c as a tensor>, msg)``: the check stays, inside the graph."""
    if isinstance(node, ast.Assert):
        cond = _tensor_condition(source, node.test)
        msg = _message(node.msg, f"assert {ast.get_source_segment(source, node.test)}")
        last: ast.stmt = node
    elif (
        isinstance(node, ast.If)
        and not node.orelse
        and len(node.body) == 1
        and isinstance(node.body[0], ast.Raise)
        and node.body[0].exc is not None
    ):
        inner = _tensor_condition(source, node.test)
        cond = None if inner is None else f"torch.logical_not({inner})"
        raised = node.body[0].exc
        msg = _message(raised, ast.get_source_segment(source, raised) or "check failed")
        last = node.body[0]
    else:
        return None
    if cond is None or "\n" in cond or not _whole_lines(source, node, last):
        return None
    indent, _ = _indent_and_comment(source, node, node.test)
    return Rewrite(
        "assert-async",
        "Check with torch._assert_async inside the graph (a failed check raises RuntimeError; "
        "on CUDA it is a device-side assert)",
        path,
        node.lineno,
        last.end_lineno or last.lineno,
        f"{indent}torch._assert_async({cond}, {msg!r})\n",
        exact=True,
    )


# A helper that only computes: a call of one of these, or a method that mutates, is a side
# effect that non-strict tracing would run once, at trace time, instead of on every call.
_PURE_BUILTINS = {"len", "tuple", "list", "dict", "float", "int", "bool", "min", "max", "sum"}
_PURE_BUILTINS |= {"abs", "range", "zip", "enumerate", "isinstance", "str"}
_MUTATING = {"append", "extend", "update", "add", "insert", "remove", "pop", "clear"}
_MUTATING |= {"setdefault", "write", "save", "register_buffer", "copy_"}
_DISABLE = {"torch.compiler.disable", "torch._dynamo.disable"}


def _pure(fn: ast.FunctionDef) -> bool:
    """Whether ``fn``'s body only computes from its arguments and returns: no ``global``,
    no stores but to local names, no calls but torch's, tensors' and a few pure builtins."""
    for n in ast.walk(fn):
        if isinstance(n, (ast.Global, ast.Nonlocal, ast.Delete, ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, ast.Store):
            return False
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Name) and f.id not in _PURE_BUILTINS:
                return False
            if isinstance(f, ast.Attribute) and (f.attr in _MUTATING or f.attr.endswith("_")):
                return False
    return True


def _nonstrict_trace(source: str, node: ast.stmt, path: str, tree: ast.Module) -> Rewrite | None:
    """A call of a helper of this file marked ``@torch.compiler.disable`` (torch runs it
    eagerly, breaking the graph around it) whose body only computes: the marker becomes
    ``@torch._dynamo.nonstrict_trace``, and torch traces the helper into the graph without
    Dynamo's bytecode analysis. A helper with side effects keeps its marker: non-strict
    tracing would run them once, at trace time."""
    called = {
        c.func.id
        for c in ast.walk(node)
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
    }
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or fn.name not in called:
            continue
        for dec in fn.decorator_list:
            if ast.unparse(dec) in _DISABLE and dec.lineno == dec.end_lineno and _pure(fn):
                line = source.splitlines(keepends=True)[dec.lineno - 1]
                if line.strip() != "@" + ast.unparse(dec):
                    return None  # a comment or another decorator on the line: left alone
                indent = line[: len(line) - len(line.lstrip())]
                return Rewrite(
                    "nonstrict-trace",
                    f"Trace {fn.name}() into the graph (torch._dynamo.nonstrict_trace) "
                    "instead of running it eagerly",
                    path,
                    dec.lineno,
                    dec.lineno,
                    f"{indent}@torch._dynamo.nonstrict_trace\n",
                    exact=True,  # in eager the marker only calls the helper
                )
    return None


RULES = (_guard_output, _torch_where, _assert_async, _nonstrict_trace)

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
    if finding.kind not in FIXABLE or not in_workspace:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    if not _imports_torch(tree):
        return []
    node = _statement_at(tree, finding.line)
    found = [rule(source, node, finding.path, tree) for rule in RULES] if node else []
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
