"""Rules for calls torch runs eagerly, breaking the graph around them: a logger call kept to
eager with ``is_compiling()`` (where that hides nothing), and a ``@torch.compiler.disable``d
helper that only computes traced non-strictly. Torch-free."""

from __future__ import annotations

import ast
import re

from .purity import pure_functions, side_effect
from .registry import BREAKS, At, fix
from .rewrite import Rewrite, eager_only, source_lines, whole_lines

LOGGER_METHODS = {
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


# What a logger is called: ``logger``, ``log``, ``_LOGGER``, ``self.logger``, ``logging``.
_LOGGER_NAME = re.compile(r"_*(?:logger|log|logging|[a-z_]*_logger)", re.I)


def _logger_like(receiver: ast.expr) -> bool:
    """Whether ``receiver`` names a logger (``self.meter.log(v)`` records a metric: not
    output to skip)."""
    if isinstance(receiver, ast.Call):  # logging.getLogger(__name__).warning(...)
        return ast.unparse(receiver.func) == "logging.getLogger"
    name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
    return bool(_LOGGER_NAME.fullmatch(name))


def _is_output_call(node: ast.stmt) -> bool:
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    func = node.value.func
    if isinstance(func, ast.Name):
        return func.id == "print"
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id == "warnings":
            return func.attr == "warn"
        return func.attr in LOGGER_METHODS and _logger_like(func.value)
    return False


def _only_output(node: ast.stmt) -> bool:
    """An output call, or an ``if`` that does nothing but output (``if pad in ids:
    logger.warning(...)``): its test is computed only to decide what to say."""
    if isinstance(node, ast.If):
        return all(_only_output(s) for s in node.body + node.orelse)
    return _is_output_call(node)


def _computed(node: ast.stmt) -> list[ast.expr]:
    """What an output statement computes besides the output itself: the arguments of its
    calls, and the tests of an ``if`` that only outputs."""
    if isinstance(node, ast.If):
        return [node.test, *(e for s in node.body + node.orelse for e in _computed(s))]
    assert isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
    return [*node.value.args, *(k.value for k in node.value.keywords)]


def output_only(node: ast.stmt, tree: ast.Module) -> bool:
    """Whether ``node`` only outputs: an output call, or an ``if`` that only outputs, whose
    arguments and tests only compute (``print(self.calls.add_(1))`` counts: a rewrite that skips
    or defers it would move that)."""
    return (
        _only_output(node)
        and side_effect(_computed(node), local_pure=pure_functions(tree), strict=True) is None
    )


def _printing(node: ast.stmt) -> bool:
    """Whether ``node`` prints or warns: skipping that in compiled calls always shows."""
    return any(
        isinstance(c, ast.Call) and ast.unparse(c.func) in ("print", "warnings.warn")
        for c in ast.walk(node)
    )


@fix("guard-output", BREAKS, rank=20, statement=True)
def guard_output(at: At) -> Rewrite | None:
    """A logger call (or an ``if`` that only outputs, with one) run only in eager. Compiled
    calls then skip it: verified only where that shows nothing (a ``debug`` record under a
    ``WARNING`` level), as verification compares log records. Output torch can defer is
    ``defer-output``'s."""
    source, node, path, tree = at.source, at.stmt, at.path, at.tree
    # Compiled calls skip the whole statement: an argument that does more than compute a value
    # (``print(self.calls.add_(1))``) would stop happening.
    if not output_only(node, tree) or _printing(node):
        return None
    if not whole_lines(source, node, node):
        return None
    text = eager_only(source, node)
    return Rewrite(
        "guard-output",
        "Run the logger call only in eager (torch.compiler.is_compiling()): compiled calls skip it",
        path,
        node.lineno,
        node.end_lineno or node.lineno,
        text,
        exact=True,
    )


_DISABLE = {"torch.compiler.disable", "torch._dynamo.disable"}


@fix("nonstrict-trace", BREAKS, rank=100, statement=True)
def nonstrict_trace(at: At) -> Rewrite | None:
    """A call of a helper of this file marked ``@torch.compiler.disable`` (torch runs it
    eagerly, breaking the graph around it) whose body only computes: the marker becomes
    ``@torch._dynamo.nonstrict_trace``, and torch traces the helper into the graph without
    Dynamo's bytecode analysis. A helper with side effects keeps its marker: non-strict
    tracing would run them once, at trace time."""
    source, node, path, tree = at.source, at.stmt, at.path, at.tree
    called = {
        c.func.id
        for c in ast.walk(node)
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
    }
    pure = pure_functions(tree)
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or fn.name not in called:
            continue
        for dec in fn.decorator_list:
            if ast.unparse(dec) in _DISABLE and dec.lineno == dec.end_lineno and fn.name in pure:
                line = source_lines(source)[dec.lineno - 1]
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
