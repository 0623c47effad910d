"""What a rewrite may move or evaluate where the original did not, read from the source alone.
Torch-free.

A rule that turns a branch into a selection computes both arms on every call; one that guards a
statement with ``is_compiling()`` stops compiled calls from running it. Either is equivalent only
where the code it moves has no effect but its value (no in-place op, no write, no random draw),
and, for a selection, where the arm that is not taken cannot put a NaN or an Inf into the
gradients (``where``'s backward multiplies the untaken arm's gradient by zero, and ``0 * inf``
is NaN). The worker checks state and gradients at run time too; these are the refusals the source
can already justify, for every input."""

from __future__ import annotations

import ast
from collections.abc import Iterable

# Methods that change the object they are called on.
MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "remove",
        "pop",
        "popitem",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "sort",
        "reverse",
        "write",
        "writelines",
        "send",
        "appendleft",
        "extendleft",
        "popleft",
        "rotate",
        "put",
        "put_nowait",
        "register_buffer",
        "register_parameter",
        "register_module",
        "add_module",
        "apply",
        "step",
        "backward",
        "save",
    }
)
# Builtins with no effect but their value.
PURE_BUILTINS = frozenset(
    {
        "abs",
        "all",
        "any",
        "bool",
        "callable",
        "dict",
        "divmod",
        "enumerate",
        "float",
        "format",
        "frozenset",
        "getattr",
        "hasattr",
        "hash",
        "id",
        "int",
        "isinstance",
        "issubclass",
        "len",
        "list",
        "max",
        "min",
        "range",
        "repr",
        "reversed",
        "round",
        "set",
        "slice",
        "sorted",
        "str",
        "sum",
        "tuple",
        "type",
        "zip",
    }
)
# Calls that draw from a random number generator: evaluated where the original did not, they
# move every later draw.
_RANDOM = frozenset(
    {
        "rand",
        "rand_like",
        "randn",
        "randn_like",
        "randint",
        "randint_like",
        "randperm",
        "bernoulli",
        "multinomial",
        "normal",
        "poisson",
        "dropout",
        "dropout1d",
        "dropout2d",
        "dropout3d",
        "alpha_dropout",
        "feature_alpha_dropout",
        "rrelu",
        "gumbel_softmax",
    }
)
_RANDOM_MODULES = ("random.", "np.random.", "numpy.random.")

# Unary functions whose gradient is infinite or NaN somewhere in their domain, each with a value
# where it is finite: the "double where" feeds that value to the untaken arm.
SAFE_INPUT = {
    "sqrt": "1.0",
    "rsqrt": "1.0",
    "log": "1.0",
    "log2": "1.0",
    "log10": "1.0",
    "log1p": "0.0",
    "reciprocal": "1.0",
    "acos": "0.0",
    "asin": "0.0",
    "atanh": "0.0",
    "arccos": "0.0",
    "arcsin": "0.0",
    "arctanh": "0.0",
    "exp": "0.0",
    "exp2": "0.0",
    "expm1": "0.0",
    "lgamma": "1.0",
    "gammaln": "1.0",  # torch.special's names for the same functions
    "digamma": "1.0",
    "psi": "1.0",
    "erfinv": "0.0",
    "tan": "0.0",
    "cosh": "0.0",
    "sinh": "0.0",
    "acosh": "2.0",
    "arccosh": "2.0",
}
# Others with no such value the rules know: an arm that holds one is refused.
_UNSAFE_OTHER = frozenset(
    {
        "pow",
        "float_power",
        "div",
        "divide",
        "true_divide",
        "fmod",
        "remainder",
        "logit",
        "xlogy",
        "xlog1py",
        "polygamma",
        "multigammaln",
        "std",
        "var",
        "std_mean",
        "var_mean",
        "hypot",
        "atan2",
        "arctan2",
        "entr",
        "ndtri",
        "erfcx",
        "dist",
        "cdist",
        "pdist",
    }
)
# Calls that raise on some values (a singular matrix): evaluated where the original did not,
# they can raise where it returned.
_MAY_RAISE = frozenset(
    {
        "solve",
        "solve_ex",
        "inv",
        "inverse",
        "cholesky",
        "cholesky_solve",
        "lu_factor",
        "lu_solve",
        "eig",
        "eigh",
        "svd",
        "matrix_power",
        "multinomial",
        "gather",
        "index_select",
        "take",
        "take_along_dim",
        "embedding",
        "one_hot",
        "scatter",
        "scatter_add",
        "index_add",
        "index_copy",
        "index_put",
    }
)
# Methods that only read (tensors', strings', containers'): what an output's arguments may call
# (a call of any other method may record something: ``self.remember(h)``).
PURE_METHODS = frozenset(
    {
        "item",
        "tolist",
        "size",
        "dim",
        "numel",
        "nelement",
        "element_size",
        "mean",
        "sum",
        "std",
        "var",
        "max",
        "min",
        "amax",
        "amin",
        "argmax",
        "argmin",
        "abs",
        "norm",
        "all",
        "any",
        "float",
        "double",
        "half",
        "int",
        "long",
        "bool",
        "detach",
        "cpu",
        "numpy",
        "clone",
        "reshape",
        "view",
        "flatten",
        "squeeze",
        "unsqueeze",
        "isnan",
        "isinf",
        "isfinite",
        "count_nonzero",
        "format",
        "join",
        "upper",
        "lower",
        "strip",
        "split",
        "replace",
        "startswith",
        "endswith",
        "keys",
        "values",
        "items",
        "get",
        "count",
        "index",
        "getEffectiveLevel",
        "isEnabledFor",
    }
)


def _dotted(node: ast.expr) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # an AST the unparser does not know: treated as unknown
        return ""


def side_effect(
    nodes: Iterable[ast.AST],
    *,
    local_pure: frozenset[str] = frozenset(),
    allowed: frozenset[str] = frozenset(),
    strict: bool = False,
    modules: dict[str, str] | None = None,
) -> str | None:
    """The first thing in ``nodes`` that does more than compute a value, in words; None when
    the source shows none. ``local_pure`` names the file's own functions that only compute;
    ``allowed`` the calls (dotted) whose effect the rule means to move (their arguments are
    still read). ``strict``: a method outside ``PURE_METHODS`` counts as an effect (what an
    output's arguments compute stops happening in compiled calls). ``modules``: the file's
    imported names and the modules they are (``imported_modules``): a call through a module
    outside ``PURE_LIBRARIES`` counts as an effect.
    Calls of a module (``self.lin(h)``) are let through: their state (batch-norm statistics)
    is compared at run time."""
    for root in nodes:
        for n in ast.walk(root):
            if isinstance(n, ast.NamedExpr):
                return f"the assignment expression {_dotted(n)}"
            if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
                return f"{type(n).__name__.lower()}"
            if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, ast.Store):
                return f"a store into {_dotted(n)}"
            if not isinstance(n, ast.Call):
                continue
            name = _dotted(n.func)
            if name in allowed:
                continue
            if any(k.arg == "out" for k in n.keywords):
                return f"{name}(out=...) writes into a tensor"
            if any(
                k.arg == "inplace"
                and not (isinstance(k.value, ast.Constant) and k.value.value is False)
                for k in n.keywords
            ):
                return f"{name}(inplace=...) may write into its input"
            last = name.rsplit(".", 1)[-1]
            # ``torch.randn``, ``F.dropout``, ``h.bernoulli()`` and ``self.dropout(h)`` (a
            # module that draws in training) alike.
            if name.startswith(_RANDOM_MODULES) or last in _RANDOM:
                return f"{name}() draws random numbers"
            base = _root(n.func)
            if modules and base in modules and modules[base] not in PURE_LIBRARIES:
                where = modules[base] or "the workspace"
                return f"{name}(), from {where}, whose effects the source does not show"
            if isinstance(n.func, ast.Attribute):
                attr = n.func.attr
                if attr.endswith("_") and not attr.endswith("__"):
                    return f"the in-place {name}()"
                if attr in MUTATING_METHODS:
                    return f"{name}() changes its object"
                if strict and attr not in PURE_METHODS and _dotted(n.func.value) not in _PURE_NS:
                    return f"{name}(), which may record or change something"
            elif isinstance(n.func, ast.Name) and n.func.id not in PURE_BUILTINS | local_pure:
                return f"{n.func.id}(), whose effects the source does not show"
    return None


# Namespaces whose functions only compute: ``torch.isnan(h)`` in an output's argument.
_PURE_NS = frozenset({"torch", "torch.linalg", "torch.special", "F", "math", "np", "numpy"})
# Libraries whose functions only compute: a call through another imported module (a helper
# module of the workspace: ``helpers.observe(h)``) may change that module's state.
PURE_LIBRARIES = frozenset({"torch", "math", "numpy", "einops", "functools", "operator"})


def _root(e: ast.expr) -> str:
    """The name an attribute chain starts from (``helpers.observe`` -> ``helpers``)."""
    while isinstance(e, ast.Attribute):
        e = e.value
    return e.id if isinstance(e, ast.Name) else ""


def imported_modules(tree: ast.Module) -> dict[str, str]:
    """The names the file's module-level imports bind, with the top package they come from
    (``import torch.nn.functional as F`` binds ``F`` from ``torch``; ``from . import helpers``
    binds ``helpers`` from the workspace: "")."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            top = (node.module or "").split(".")[0] if not node.level else ""
            for a in node.names:
                out[a.asname or a.name] = top
    return out


def may_raise(nodes: Iterable[ast.AST]) -> str | None:
    """The first operation under ``nodes`` that raises on some values (``torch.linalg.solve``
    of a singular matrix, an index out of range: ``table[ids]``, ``x.gather(0, idx)``), in
    words: evaluated where the original skipped it, it can raise where the original
    returned."""
    for root in nodes:
        for n in ast.walk(root):
            if isinstance(n, ast.Call) and _dotted(n.func).rsplit(".", 1)[-1] in _MAY_RAISE:
                return f"{_dotted(n.func)}() can raise on values the original never gave it"
            if (
                isinstance(n, ast.BinOp)
                and isinstance(n.op, (ast.FloorDiv, ast.Mod))
                and not _nonzero_constant(n.right)
            ):
                return f"{_dotted(n)} divides integers by what may be 0"
            if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load):
                parts = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
                if any(not _static_index(p) for p in parts):
                    return f"{_dotted(n)} indexes with a value that may be out of range"
    return None


def _static_index(e: ast.expr) -> bool:
    """A constant index, ``None``, ``...`` or a slice (slices never raise: they clamp)."""
    if isinstance(e, ast.Slice):
        return True
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        e = e.operand
    return isinstance(e, ast.Constant)


def unsafe_gradients(node: ast.AST) -> list[ast.AST]:
    """The operations under ``node`` whose gradient can be NaN or infinite (``sqrt``, ``log``,
    a division, a power), outermost first."""
    out: list[ast.AST] = []
    for n in ast.walk(node):
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Div, ast.Pow, ast.Mod)):
            if isinstance(n.op, ast.Pow) and _whole_power(n.right):
                continue
            if isinstance(n.op, ast.Div) and _nonzero_constant(n.right):
                continue
            out.append(n)
        elif isinstance(n, ast.Call):
            last = _dotted(n.func).rsplit(".", 1)[-1]
            if last in SAFE_INPUT or last in _UNSAFE_OTHER:
                out.append(n)
    return out


def safe_operand(op: ast.AST) -> tuple[ast.expr, str] | None:
    """For an operation ``unsafe_gradients`` found, the operand to feed through
    ``torch.where`` and the value that keeps its gradient finite: ``e`` of ``torch.sqrt(e)``
    or ``e.sqrt()``, the divisor of ``a / b``; None for a power or another form."""
    if isinstance(op, ast.BinOp):
        return (op.right, "1.0") if isinstance(op.op, ast.Div) else None
    return unary_operand(op)


def _whole_power(e: ast.expr) -> bool:
    return isinstance(e, ast.Constant) and isinstance(e.value, int) and e.value >= 0


def _nonzero_constant(e: ast.expr) -> bool:
    return (
        isinstance(e, ast.Constant)
        and isinstance(e.value, (int, float))
        and not isinstance(e.value, bool)
        and e.value != 0
    )


def unary_operand(call: ast.AST) -> tuple[ast.expr, str] | None:
    """For ``torch.sqrt(e)`` or ``e.sqrt()`` (a ``SAFE_INPUT`` function), ``e`` and the value
    the untaken arm may take instead; None for any other form."""
    if not isinstance(call, ast.Call) or call.keywords:
        return None
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in SAFE_INPUT:
        return None
    if len(call.args) == 1 and _dotted(func.value) in ("torch", "torch.special"):
        return call.args[0], SAFE_INPUT[func.attr]
    if not call.args and _dotted(func.value) not in ("torch", "torch.special", "math"):
        return func.value, SAFE_INPUT[func.attr]
    return None


def pure_functions(tree: ast.Module) -> frozenset[str]:
    """The module-level functions of the file whose bodies only compute from their arguments
    (no global statement, no store but to locals, no call but pure builtins', torch's and
    tensors' non-mutating ones, no read of a module-level value that can change: a ``SCALE``
    a setter rebinds, a ``deque`` a call appends to)."""
    constant = _unchanging(tree)
    out = set()
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        if any(isinstance(n, (ast.Global, ast.Nonlocal, ast.Delete)) for n in ast.walk(fn)):
            continue
        local = {
            n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        } | {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
        free = {
            n.id
            for n in ast.walk(fn)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in local
        }
        if free - constant - PURE_BUILTINS - _BUILTIN_NAMES:
            continue
        if side_effect(fn.body) is None:
            out.add(fn.name)
    return frozenset(out)


_BUILTIN_NAMES = frozenset({"True", "False", "None", "print", "Exception", "ValueError"})


def _unchanging(tree: ast.Module) -> frozenset[str]:
    """Module-level names bound only once, to a module, a function, a class (imports and
    definitions): what a helper may read."""
    bound: dict[str, int] = {}
    kinds: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound[node.id] = bound.get(node.id, 0) + 1
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            kinds.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            kinds.add(node.name)
    return frozenset(k for k in kinds if k not in bound)
