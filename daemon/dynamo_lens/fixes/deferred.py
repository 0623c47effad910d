"""The rules for output in traced code (a break: torch does not trace into ``logging``,
``print`` or ``warnings``), in a module or function torch inlines as much as in the frame it
compiles. ``defer-log``: a logger call (a break: torch does not trace into ``logging``),
in a module or function torch inlines as much as in the frame it compiles: the call becomes one
of a custom op the rule adds to the file (customops.py), which logs the same record, level and
message, to the same logger, where the graph runs. GraphMend defers such calls until after the
graph; torch's own ``reorderable_logging_functions`` does so only in the frame it compiles and
not for a logger's methods. Torch-free.

Only a logger the file binds at its top level (``logger = logging.getLogger(__name__)``,
transformers' ``logging.get_logger(__name__)``), and a message that is a string literal: the
record then says what the original's said. Its place (``%(lineno)s``, ``%(funcName)s``) is the
op's, not the call's."""

from __future__ import annotations

import ast

from .calls import LOGGER_METHODS
from .customops import definition, with_op
from .registry import BREAKS, At, fix
from .rewrite import Rewrite, bindings, imports, indent_and_comment, whole_lines

HELPER = "_log_in_graph"
SAY = "_say_in_graph"
_SAY_TEXT = definition(
    "say",
    "kind: str, text: str, category: str",
    '        if kind == "print":\n'
    "            print(text)\n"
    "        else:\n"
    "            import builtins\n"
    "            import warnings\n\n"
    "            warnings.warn(text, getattr(builtins, category))\n",
    SAY,
)
_HELPER_TEXT = definition(
    "log",
    "logger: str, method: str, message: str",
    "        import logging\n\n        getattr(logging.getLogger(logger), method)(message)\n",
    HELPER,
)
# ``exception`` reads the exception being handled, ``log`` takes a level first.
_METHODS = LOGGER_METHODS - {"exception", "log"}


def _logger_names(tree: ast.Module) -> dict[str, str]:
    """The file's top-level loggers: their variable, and what names the logger, as text
    (``__name__``, a string literal)."""
    out: dict[str, str] = {}
    for n in tree.body:
        if not (
            isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and isinstance(n.value, ast.Call)
            and ast.unparse(n.value.func).rsplit(".", 1)[-1] in ("getLogger", "get_logger")
            and len(n.value.args) == 1
            and not n.value.keywords
        ):
            continue
        if bindings(tree)[n.targets[0].id] != 1:
            continue  # rebound (a ``LoggerAdapter`` around it, another logger): not this one
        arg = n.value.args[0]
        if isinstance(arg, ast.Name) and arg.id == "__name__":
            out[n.targets[0].id] = "__name__"
        elif isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            out[n.targets[0].id] = repr(arg.value)
    return out


@fix("defer-log", BREAKS, rank=30, statement=True)
def defer_log(at: At) -> Rewrite | None:
    """``logger.warning("msg")`` becomes ``_log_in_graph(__name__, "warning", "msg")``."""
    source, node, path, tree = at.source, at.stmt, at.path, at.tree
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return None
    call = node.value
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.attr in _METHODS
        and len(call.args) == 1
        and not call.keywords
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
    ):
        return None
    name = _logger_names(tree).get(func.value.id)
    if name is None or not whole_lines(source, node, node):
        return None
    # Shadowed in the function (a parameter, a local named ``logger``): not the file's.
    for f in ast.walk(tree):
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and node in ast.walk(f):
            local = {a.arg for a in ast.walk(f.args) if isinstance(a, ast.arg)} | {
                t.id
                for t in ast.walk(f)
                if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
            }
            if func.value.id in local:
                return None
    indent, comment = indent_and_comment(source, node, call)
    site = f"{indent}{HELPER}({name}, {func.attr!r}, {call.args[0].value!r}){comment}\n"
    return with_op(
        "defer-log",
        f"Log from inside the graph ({func.value.id}.{func.attr}: the same record, where the "
        "graph runs; a custom op added to the file) instead of breaking it",
        path,
        source,
        tree,
        node.lineno,
        node.end_lineno or node.lineno,
        site,
        _HELPER_TEXT,
        HELPER,
    )


def _literal(e: ast.expr) -> str | None:
    return e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else None


# The built-in warning categories a literal names: raised by name from ``builtins``.
_CATEGORIES = {
    "BytesWarning",
    "DeprecationWarning",
    "FutureWarning",
    "ImportWarning",
    "PendingDeprecationWarning",
    "ResourceWarning",
    "RuntimeWarning",
    "SyntaxWarning",
    "UnicodeWarning",
    "UserWarning",
    "Warning",
}


def _warning(call: ast.Call, tree: ast.Module) -> tuple[str, str] | None:
    """``warnings.warn("msg"[, Category][, stacklevel=n])``: the message and the category's
    name. ``stacklevel`` only places the warning, and a warning from the op is placed there."""
    args = call.args
    text = _literal(args[0]) if args and len(args) <= 2 else None
    cat = args[1] if len(args) == 2 else None
    for k in call.keywords:
        if k.arg == "category" and cat is None:
            cat = k.value
        elif k.arg != "stacklevel":
            return None
    category = "UserWarning" if cat is None else getattr(cat, "id", "")
    if text is None or category not in _CATEGORIES or bindings(tree)[category]:
        return None
    return text, category


@fix("defer-output", BREAKS, rank=10, statement=True)
def defer_output(at: At) -> Rewrite | None:
    """``print("a", "b")`` and ``warnings.warn("msg"[, FutureWarning])`` (string literals, a
    built-in category) become ``_say_in_graph("print", "a b", "")``: the same text, printed or
    warned where the graph runs. Not torch's ``reorderable_logging_functions``: a setting of the
    whole process, it would defer every compiled print of every module, which then shows values
    as they are after the graph, and torch drops the call in a frame it inlines."""
    source, node, path, tree = at.source, at.stmt, at.path, at.tree
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return None
    call = node.value
    name = ast.unparse(call.func)
    if not whole_lines(source, node, node):
        return None
    if name == "print":
        texts = [_literal(a) for a in call.args]
        if not texts or call.keywords or any(t is None for t in texts):
            return None
        kind, text, category = "print", " ".join(t or "" for t in texts), ""
    elif name == "warnings.warn" and imports(tree, "warnings"):
        found = _warning(call, tree)
        if found is None:
            return None
        kind, (text, category) = "warn", found
    else:
        return None
    indent, comment = indent_and_comment(source, node, call)
    site = f"{indent}{SAY}({kind!r}, {text!r}, {category!r}){comment}\n"
    return with_op(
        "defer-output",
        f"{'Print' if kind == 'print' else 'Warn'} from inside the graph (the same text, where the "
        "graph runs; a custom op added to the file) instead of breaking it",
        path,
        source,
        tree,
        node.lineno,
        node.end_lineno or node.lineno,
        site,
        _SAY_TEXT,
        SAY,
    )
