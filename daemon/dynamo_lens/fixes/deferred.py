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
op's, not the call's.

``defer-output`` says a literal print or warning the same way, and a print of what tensors are
(their shape, dtype, device) from a template the op fills with the real tensors where the graph
runs. ``output-if``: such output under ``if <tensor test>:``, which asks the tensor for a bool
(a break), is said by an op that is given the test as a tensor and says it only where it
holds."""

from __future__ import annotations

import ast

from .branches import tensor_condition
from .calls import LOGGER_METHODS
from .customops import definition, with_op
from .registry import BREAKS, At, fix
from .rewrite import Rewrite, bindings, imports, indent_and_comment, whole_lines

HELPER = "_log_in_graph"
SAY = "_say_in_graph"
# What both ``say`` ops run: the text printed, or warned with its built-in category.
_SAY_BODY = (
    '        if kind == "print":\n'
    "            print(text)\n"
    "        else:\n"
    "            import builtins\n"
    "            import warnings\n\n"
    "            warnings.warn(text, getattr(builtins, category))\n"
)
_SAY_TEXT = definition("say", "kind: str, text: str, category: str", _SAY_BODY, SAY)
# The same, where a tensor test decides (``if <tensor test>: print("...")``): the op is told
# the test's value and says the text only where it holds.
SAY_IF = "_say_if_in_graph"
_SAY_IF_TEXT = definition(
    "say_if",
    "when: torch.Tensor, kind: str, text: str, category: str",
    "        if not bool(when):\n            return\n" + _SAY_BODY,
    SAY_IF,
)
# A print of what tensors are (``print(f"h: {h.shape}")``): the text is made where the graph
# runs, from the real tensors, so a size torch keeps symbolic is never read while it traces
# (an f-string of a dynamic size would make torch compile again for each new size).
PRINT_WITH = "_print_in_graph"
_PRINT_WITH_TEXT = definition(
    "print_with",
    "template: str, values: list[torch.Tensor]",
    "        print(template.format(*values))\n",
    PRINT_WITH,
)
LOG_IF = "_log_if_in_graph"
_LOG_IF_TEXT = definition(
    "log_if",
    "when: torch.Tensor, logger: str, method: str, message: str",
    "        if bool(when):\n"
    "            import logging\n\n"
    "            getattr(logging.getLogger(logger), method)(message)\n",
    LOG_IF,
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


def _logged(node: ast.stmt, tree: ast.Module) -> tuple[str, str, str] | None:
    """``logger.warning("msg")`` as a statement, on a logger the file binds at its top level:
    (what names the logger, the method, the message)."""
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
    if name is None:
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
    return name, func.attr, call.args[0].value


@fix("defer-log", BREAKS, rank=30, statement=True)
def defer_log(at: At) -> Rewrite | None:
    """``logger.warning("msg")`` becomes ``_log_in_graph(__name__, "warning", "msg")``."""
    source, node, path, tree = at.source, at.stmt, at.path, at.tree
    logged = _logged(node, tree)
    if logged is None or not whole_lines(source, node, node):
        return None
    assert isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
    name, method, message = logged
    func = node.value.func
    assert isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
    indent, comment = indent_and_comment(source, node, node.value)
    site = f"{indent}{HELPER}({name}, {method!r}, {message!r}){comment}\n"
    return with_op(
        "defer-log",
        f"Log from inside the graph ({func.value.id}.{method}: the same record, where the "
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
    # Python shows a warning once per place: two places warning the same text would become
    # the op's one place, and the user would see it once where they saw it twice.
    same = [
        c
        for c in ast.walk(tree)
        if isinstance(c, ast.Call)
        and c is not call
        and ast.unparse(c.func) == "warnings.warn"
        and c.args
        and _literal(c.args[0]) == text
    ]
    return None if same else (text, category)


def _said(call: ast.Call, tree: ast.Module) -> tuple[str, str, str] | None:
    """``print("a", "b")`` (no keywords) or ``warnings.warn("msg"[, Category])`` in literals:
    (kind, text, category)."""
    name = ast.unparse(call.func)
    if name == "print":
        texts = [_literal(a) for a in call.args]
        if not texts or call.keywords or any(t is None for t in texts):
            return None
        return "print", " ".join(t or "" for t in texts), ""
    if name == "warnings.warn" and imports(tree, "warnings"):
        found = _warning(call, tree)
        return None if found is None else ("warn", *found)
    return None


# What a print may show of a tensor, read where the graph runs: the same there as in eager
# (not ``requires_grad``: a compiled graph's tensors do not ask for gradients).
_SHOWN = {"shape", "dtype", "device", "ndim", "is_cuda", "layout"}
_CONVERSIONS = {-1: "", 115: "!s", 114: "!r", 97: "!a"}


def _field(e: ast.expr, names: list[str]) -> str | None:
    """``h.shape``, ``h.shape[1]``, ``h.dtype`` as a field of ``str.format`` over the op's
    tensors (``0.shape[1]``); ``names`` collects the tensors' variables."""
    index = ""
    if isinstance(e, ast.Subscript):
        k = e.slice
        if not (isinstance(k, ast.Constant) and type(k.value) is int and k.value >= 0):
            return None  # ``str.format`` reads ``[-1]`` as a key
        index, e = f"[{k.value}]", e.value
        if not (isinstance(e, ast.Attribute) and e.attr == "shape"):
            return None
    if not (isinstance(e, ast.Attribute) and e.attr in _SHOWN and isinstance(e.value, ast.Name)):
        return None
    if e.value.id not in names:
        names.append(e.value.id)
    return f"{names.index(e.value.id)}.{e.attr}{index}"


def _escaped(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _template(call: ast.Call) -> tuple[str, list[str]] | None:
    """``print("h", h.shape, f"of {h.dtype}")`` as a template of ``str.format`` and the tensors
    it reads: the text print would show, made from the tensors. Literals, f-strings and
    arguments that read only what ``_SHOWN`` names; no keywords."""
    if ast.unparse(call.func) != "print" or call.keywords or not call.args:
        return None
    names: list[str] = []
    parts = []
    for arg in call.args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            parts.append(_escaped(arg.value))
            continue
        if not isinstance(arg, ast.JoinedStr):
            field = _field(arg, names)
            if field is None:
                return None
            parts.append("{" + field + "}")
            continue
        text = ""
        for v in arg.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                text += _escaped(v.value)
                continue
            if not isinstance(v, ast.FormattedValue):
                return None
            field = _field(v.value, names)
            spec = v.format_spec
            if field is None or v.conversion not in _CONVERSIONS:
                return None
            said = ""
            if spec is not None:
                given = spec.values if isinstance(spec, ast.JoinedStr) else []
                pieces = [_literal(p) for p in given]
                if not given or any(p is None or "{" in p or "}" in p for p in pieces):
                    return None  # a spec built at run time
                said = ":" + "".join(p or "" for p in pieces)
            text += "{" + field + _CONVERSIONS[v.conversion] + said + "}"
        parts.append(text)
    return (" ".join(parts), names) if names else None


@fix("defer-output", BREAKS, rank=10, statement=True)
def defer_output(at: At) -> Rewrite | None:
    """``print("a", "b")`` and ``warnings.warn("msg"[, FutureWarning])`` (string literals, a
    built-in category) become ``_say_in_graph("print", "a b", "")``: the same text, printed or
    warned where the graph runs. A print of what tensors are (``print(f"h: {h.shape}")``)
    becomes ``_print_in_graph("h: {0.shape}", [h])``: the text made there, from the real
    tensors. Not torch's ``reorderable_logging_functions``: a setting of the whole process, it
    would defer every compiled print of every module, which then shows values as they are after
    the graph, and torch drops the call in a frame it inlines."""
    source, node, path, tree = at.source, at.stmt, at.path, at.tree
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return None
    call = node.value
    if not whole_lines(source, node, node):
        return None
    indent, comment = indent_and_comment(source, node, call)
    said = _said(call, tree)
    shown = _template(call) if said is None else None
    if shown is not None:
        template, names = shown
        site = f"{indent}{PRINT_WITH}({template!r}, [{', '.join(names)}]){comment}\n"
        helper, binding, kind = _PRINT_WITH_TEXT, PRINT_WITH, "print"
    elif said is not None:
        kind, text, category = said
        site = f"{indent}{SAY}({kind!r}, {text!r}, {category!r}){comment}\n"
        helper, binding = _SAY_TEXT, SAY
    else:
        return None
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
        helper,
        binding,
    )


_READS = (
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Slice,
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.UnaryOp,
    ast.USub,
    ast.Load,
)


def _tensor_test(source: str, test: ast.expr) -> str | None:
    """An ``if``'s test as one tensor: ``a in t`` (a tensor's ``__contains__``, which asks for
    a bool) as ``(t == a).any()``; else as ``torch-where`` makes it (branches.py)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, (ast.In, ast.NotIn)):
            # Read in the other order (``t`` first): only reads, which no order changes. And
            # ``t`` not a list the code writes (``tok in [0, 1]``): Python's ``in``, no tensor.
            if not all(
                isinstance(n, _READS) for side in (test.left, right) for n in ast.walk(side)
            ):
                return None
            if isinstance(right, (ast.List, ast.Tuple, ast.Constant)):
                return None
            a = ast.get_source_segment(source, test.left)
            t = ast.get_source_segment(source, right)
            if a is None or t is None or "\n" in a + t:
                return None
            found = f"({t} == {a}).any()"
            return found if isinstance(op, ast.In) else f"torch.logical_not({found})"
    return tensor_condition(source, test)


@fix("output-if", BREAKS, rank=35, statement=True, selecting=True)
def output_if(at: At) -> Rewrite | None:
    """``if <tensor test>: <a literal print, warning or log record>`` (no ``else``) becomes a
    call of ``_say_if_in_graph`` or ``_log_if_in_graph`` with the test as a tensor: the op,
    where the graph runs, says the same text where the test holds (HF's padding warning:
    ``if pad_id in input_ids[:, [-1, 0]]: logger.warning(...)``). Verified on inputs that
    take each path, as the branch is gone."""
    source, node, path, tree = at.source, at.stmt, at.path, at.tree
    if not (isinstance(node, ast.If) and not node.orelse and len(node.body) == 1):
        return None
    body = node.body[0]
    when = _tensor_test(source, node.test)
    if when is None or "\n" in when or not whole_lines(source, node, body):
        return None
    if not (isinstance(body, ast.Expr) and isinstance(body.value, ast.Call)):
        return None
    indent, comment = indent_and_comment(source, node, node.test)
    said = _said(body.value, tree)
    logged = _logged(body, tree) if said is None else None
    if said is not None:
        kind, text, category = said
        site = f"{indent}{SAY_IF}({when}, {kind!r}, {text!r}, {category!r}){comment}\n"
        helper, binding = _SAY_IF_TEXT, SAY_IF
        what = "Print" if kind == "print" else "Warn"
    elif logged is not None:
        name, method, message = logged
        site = f"{indent}{LOG_IF}({when}, {name}, {method!r}, {message!r}){comment}\n"
        helper, binding, what = _LOG_IF_TEXT, LOG_IF, "Log"
    else:
        return None
    return with_op(
        "output-if",
        f"{what} from inside the graph where the test holds (the test as a tensor, the same "
        "text; a custom op added to the file) instead of breaking it",
        path,
        source,
        tree,
        node.lineno,
        body.end_lineno or body.lineno,
        site,
        helper,
        binding,
        branch=node.lineno,
    )
