"""The rule for a check on a tensor's value that raises (``assert <tensor test>``, ``if <tensor
test>: raise ValueError(...)``): torch must ask the tensor for a bool, a break. The check moves
into the graph as a call of a custom op the rule adds to the file, which torch does not trace
into: it runs with the real values where the graph runs, and raises the original exception,
type and message (a caller's ``except ValueError`` still catches it). Torch-free."""

from __future__ import annotations

import ast

from .branches import tensor_condition
from .customops import definition, with_op
from .registry import BREAKS, At, fix
from .rewrite import Rewrite, bindings, indent_and_comment, whole_lines

HELPER = "_raise_if"
# Raised by name from ``builtins``: the op is the same whichever file defined it first (each
# file that uses it carries the definition, taken only where none is there yet). A class of the
# user's is not one of them: such a check is left as it is.
_BUILTIN_ERRORS = {
    "ArithmeticError",
    "AssertionError",
    "Exception",
    "IndexError",
    "KeyError",
    "LookupError",
    "NotImplementedError",
    "OverflowError",
    "RuntimeError",
    "TypeError",
    "ValueError",
    "ZeroDivisionError",
}

_HELPER_TEXT = definition(
    "raise_if",
    "failed: torch.Tensor, error: str, message: str",
    "        if bool(failed):\n"
    "            import builtins\n\n"
    "            raise getattr(builtins, error)(message)\n",
    HELPER,
)


def _guarded(tree: ast.Module, node: ast.stmt) -> bool:
    """Whether ``node`` sits in a ``try`` or a ``with`` (``contextlib.suppress``): the op raises
    where the graph runs, outside them."""
    for n in ast.walk(tree):
        if isinstance(n, (ast.Try, ast.TryStar, ast.With, ast.AsyncWith)) and n is not node:
            blocks = [*n.body, *getattr(n, "orelse", [])]
            if any(node is m for b in blocks for m in ast.walk(b)):
                return True
    return False


def _message(node: ast.expr | None) -> str | None:
    """The exception's message where the code gives it as a string literal ("" for none); None
    for one built at run time, which the op could not give exactly."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _raised(exc: ast.expr) -> tuple[str, str] | None:
    """``ValueError("msg")`` or ``ValueError`` as (class name, message)."""
    if isinstance(exc, ast.Name):
        name, msg = exc.id, ""
    elif (
        isinstance(exc, ast.Call)
        and isinstance(exc.func, ast.Name)
        and len(exc.args) <= 1
        and not exc.keywords
    ):
        name = exc.func.id
        found = _message(exc.args[0] if exc.args else None)
        if found is None:
            return None
        msg = found
    else:
        return None
    return (name, msg) if name in _BUILTIN_ERRORS else None


@fix("check-in-graph", BREAKS, rank=90, statement=True, selecting=True)
def check_in_graph(at: At) -> Rewrite | None:
    """``assert c, msg`` and ``if c: raise E(msg)`` on a tensor become ``_raise_if(<failed, as a
    tensor>, "E", msg)``; the op is added after the file's imports where it is not there yet."""
    source, node, path, tree = at.source, at.stmt, at.path, at.tree
    if isinstance(node, ast.Assert):
        test = node.test
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            failed = tensor_condition(source, test.operand)  # ``assert not x``: fails on x
        else:
            inner = tensor_condition(source, test)
            failed = None if inner is None else f"torch.logical_not({inner})"
        msg = _message(node.msg)
        raised = None if msg is None else ("AssertionError", msg)
        last: ast.stmt = node
    elif (
        isinstance(node, ast.If)
        and not node.orelse
        and len(node.body) == 1
        and isinstance(node.body[0], ast.Raise)
        and node.body[0].exc is not None
        and node.body[0].cause is None
    ):
        failed = tensor_condition(source, node.test)
        raised = _raised(node.body[0].exc)
        last = node.body[0]
    else:
        return None
    if failed is None or raised is None or "\n" in failed or not whole_lines(source, node, last):
        return None
    if raised[0] in bindings(tree) or _guarded(tree, node):
        return None
    indent, comment = indent_and_comment(source, node, node.test)
    if isinstance(node, ast.Assert) and node.msg is not None:
        _, comment = indent_and_comment(source, node, node.msg)
    error, msg = raised
    call = f"{indent}{HELPER}({failed}, {error!r}, {msg!r}){comment}\n"
    end = last.end_lineno or last.lineno
    title = (
        f"Check inside the graph, raising {error} where it fails (a custom op added to the "
        "file, which torch does not trace into)"
    )
    return with_op(
        "check-in-graph",
        title,
        path,
        source,
        tree,
        node.lineno,
        end,
        call,
        _HELPER_TEXT,
        HELPER,
        branch=node.lineno,
    )
