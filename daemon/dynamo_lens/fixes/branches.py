"""The rule for a Python branch on a tensor's value (torch must ask the tensor for a bool: a
break): the branch becomes a selection (``torch.where``). Torch-free."""

from __future__ import annotations

import ast
import itertools

from .purity import (
    imported_modules,
    may_raise,
    pure_functions,
    safe_operand,
    side_effect,
    unsafe_gradients,
)
from .registry import BREAKS, At, fix
from .rewrite import (
    SELECT,
    Rewrite,
    following,
    fresh_name,
    indent_and_comment,
    indent_step,
    single_assign,
    single_return,
)

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


def tensor_condition(source: str, expr: ast.expr) -> str | None:
    """``expr`` as one tensor expression: Python's ``not``, ``and`` and ``or`` ask a tensor for
    a bool (the break itself), so they become ``torch.logical_*``. None where an operand may be
    a Python value that guards the next (``m is not None and m.any()``): both sides would be
    computed, and the guard was there to stop that."""
    as_tensor = _stacked(source, expr) or _equal(source, expr)
    if as_tensor is not None:
        return as_tensor
    if _python_bool(expr):
        return None
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        inner = tensor_condition(source, expr.operand)
        return None if inner is None else f"torch.logical_not({inner})"
    if isinstance(expr, ast.BoolOp):
        parts = []
        for v in expr.values:
            if isinstance(v, (ast.Name, ast.Constant, ast.Attribute)) or (
                isinstance(v, ast.Compare)
                and any(isinstance(o, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for o in v.ops)
            ):
                return None
            part = tensor_condition(source, v)
            if part is None:
                return None
            parts.append(part)
        fn = "torch.logical_and" if isinstance(expr.op, ast.And) else "torch.logical_or"
        out = parts[0]
        for part in parts[1:]:
            out = f"{fn}({out}, {part})"
        return out
    return ast.get_source_segment(source, expr)


# What a tensor tells while torch traces it, without its values: its dtype, shape, device,
# whether its module trains. A test of these is a Python bool then, not a graph break.
_STATIC_ATTRS = {
    "dtype",
    "shape",
    "ndim",
    "device",
    "is_cuda",
    "training",
    "requires_grad",
    "layout",
    "is_sparse",
}
_STATIC_METHODS = {"dim", "size", "numel", "is_floating_point", "is_complex", "is_contiguous"}
_STATIC_CALLS = {"len", "isinstance", "hasattr", "callable"}


def _static(expr: ast.expr) -> bool:
    """Whether ``expr`` is a Python value while torch traces: a test of a tensor's dtype or
    shape (``h.dtype == torch.float16``), ``is None``, a constant, ``torch.<name>``. Reads no
    tensor's values and has no side effect."""
    if isinstance(expr, ast.Constant):
        return True
    if isinstance(expr, ast.Compare):
        if any(isinstance(o, (ast.Is, ast.IsNot)) for o in expr.ops) and any(
            isinstance(c, ast.Constant) and c.value is None for c in [expr.left, *expr.comparators]
        ):
            return True  # ``m is not None``: whatever ``m`` is
        return all(_static(e) for e in [expr.left, *expr.comparators])
    if isinstance(expr, ast.BoolOp):
        return all(_static(v) for v in expr.values)
    if isinstance(expr, ast.UnaryOp):
        return _static(expr.operand)
    if isinstance(expr, ast.Attribute):
        root: ast.expr = expr
        while isinstance(root, ast.Attribute):
            root = root.value
        return expr.attr in _STATIC_ATTRS or (isinstance(root, ast.Name) and root.id == "torch")
    if isinstance(expr, ast.Subscript):  # h.shape[-1]
        return _static(expr.value) and _static(expr.slice)
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Name):
            return func.id in _STATIC_CALLS
        return isinstance(func, ast.Attribute) and func.attr in _STATIC_METHODS
    return False


def split_static(test: ast.expr) -> tuple[list[ast.expr], ast.expr]:
    """``test`` as the Python-valued tests it opens with (``h.dtype == torch.float16 and
    (...)``) and the tensor test that follows: ``if s and t: x = a`` is ``if s: x =
    torch.where(t, a, x)``, ``t`` still computed only where ``s`` holds (``m is not None and
    m.any()``)."""
    if not isinstance(test, ast.BoolOp) or not isinstance(test.op, ast.And):
        return [], test
    n = 0
    while n < len(test.values) - 1 and _static(test.values[n]):
        n += 1
    if n == 0:
        return [], test
    rest = test.values[n:]
    return test.values[:n], rest[0] if len(rest) == 1 else ast.BoolOp(ast.And(), rest)


def _one_loop(comp: ast.expr) -> ast.comprehension | None:
    """The loop of ``[elt for v in xs]`` (or a generator): one ``for`` over a name, no ``if``."""
    if not isinstance(comp, (ast.GeneratorExp, ast.ListComp)) or len(comp.generators) != 1:
        return None
    loop = comp.generators[0]
    if loop.ifs or loop.is_async or not isinstance(loop.target, ast.Name):
        return None
    return loop


def _stacked(source: str, expr: ast.expr) -> str | None:
    """``any(<tensor test> for v in xs)`` (or ``all``) as one tensor:
    ``torch.stack([<test> for v in xs]).any()``. Python's ``any`` asks each tensor for a bool
    (the break); the stack asks none. Its tests must be tensors of one shape, and ``xs`` not
    empty: verification runs it."""
    if not (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id in ("any", "all")
        and len(expr.args) == 1
        and not expr.keywords
    ):
        return None
    comp = expr.args[0]
    loop = _one_loop(comp)
    if loop is None:
        return None
    assert isinstance(comp, (ast.GeneratorExp, ast.ListComp))
    elt = ast.get_source_segment(source, comp.elt)
    xs = ast.get_source_segment(source, loop.iter)
    v = ast.get_source_segment(source, loop.target)
    if (
        elt is None
        or xs is None
        or v is None
        or not isinstance(loop.iter, (ast.Name, ast.Attribute))
    ):
        return None  # ``xs`` is read twice: a name, not a generator
    # ``any([])`` is False and ``all([])`` True, where ``torch.stack([])`` raises; the list's
    # length is known while tracing.
    empty = "False" if expr.func.id == "any" else "True"
    return (
        f"(torch.stack([{elt} for {v} in {xs}]).{expr.func.id}() if len({xs}) "
        f"else torch.tensor({empty}))"
    )


def _equal_args(source: str, expr: ast.expr) -> tuple[str, str] | None:
    """The two tensors of ``torch.equal(a, b)``, names or attributes (each is read twice)."""
    if not (
        isinstance(expr, ast.Call)
        and ast.unparse(expr.func) == "torch.equal"
        and len(expr.args) == 2
        and not expr.keywords
        and all(isinstance(a, (ast.Name, ast.Attribute)) for a in expr.args)
    ):
        return None
    a, b = (ast.get_source_segment(source, x) for x in expr.args)
    return None if a is None or b is None else (a, b)


def mentions_equal(expr: ast.expr) -> bool:
    """Whether a test calls ``torch.equal``: a test that shapes agree. A selection computes
    its arms whatever the test says, so tensors of other shapes would meet in them."""
    return any(
        isinstance(n, ast.Call) and ast.unparse(n.func) == "torch.equal" for n in ast.walk(expr)
    )


def _equal(source: str, expr: ast.expr) -> str | None:
    """``torch.equal(a, b)`` (a Python bool) as a tensor: equal shapes (known while tracing,
    so no break) and every element equal."""
    found = _equal_args(source, expr)
    if found is None:
        return None
    a, b = found
    return (
        f"(({a} == {b}).all() if {a}.shape == {b}.shape else {a}.new_zeros((), dtype=torch.bool))"
    )


def _mapped(source: str, name: str, value: ast.expr) -> tuple[str, str] | None:
    """``name = [f(v) for v in name]``: the element and the loop variable, as text."""
    loop = _one_loop(value)
    if loop is None or not isinstance(value, ast.ListComp):
        return None
    if not (isinstance(loop.iter, ast.Name) and loop.iter.id == name):
        return None
    elt = ast.get_source_segment(source, value.elt)
    assert isinstance(loop.target, ast.Name)
    return (elt, loop.target.id) if elt is not None else None


@fix("torch-where", BREAKS, rank=70, statement=True, selecting=True)
def torch_where(at: At) -> Rewrite | None:
    """``if c: x = a [else: x = b]`` becomes ``x = torch.where(c, a, x or b)``, and
    ``if c: return a`` followed by (or ``else:``) ``return b`` becomes
    ``return torch.where(c, a, b)``. Both arms are then computed on every call, so an arm must
    only compute (no in-place op, no random draw, no write), and an operation whose gradient
    can be infinite in the arm not taken (``sqrt``, ``log``, a division) gets its operand
    through ``torch.where`` too (the "double where"), else the rule stays out."""
    source, node, path, tree = at.source, at.stmt, at.path, at.tree
    if not isinstance(node, ast.If):
        return None
    helpers = _helpers(source, tree, node)
    then = single_assign(node.body[len(helpers) :])
    end = node.end_lineno or node.lineno
    after: ast.expr | None = None
    if then is not None:
        name, value = then
        if node.orelse:
            other = single_assign(node.orelse)
            if other is None or other[0] != name:
                return None
            after = other[1]
        head = f"{name} = "
    else:
        returned = single_return(node.body)
        if returned is None:
            return None
        value = returned
        after = single_return(node.orelse) if node.orelse else None
        if after is None and not node.orelse:
            nxt = following(tree, node)
            after = single_return([nxt]) if nxt is not None else None
            end = (nxt.end_lineno or nxt.lineno) if nxt is not None else end
        if after is None:
            return None
        head = "return "
    arms = [value, *([after] if after is not None else [])]
    mapped = _mapped(source, then[0], then[1]) if then is not None and not node.orelse else None
    if mapped is None and any(isinstance(a, (*_CONTAINERS, ast.Constant)) for a in arms):
        return None  # a Python value, not a tensor: torch.where would change its type
    computed = [*arms, *(h.value for h in helpers if isinstance(h, ast.Assign))]
    # Tests of a dtype or shape that open the condition stay a Python ``if`` around the
    # selection (split_static); the tensor test after them is what is selected on.
    static, test = split_static(node.test)
    # ``a and b`` becomes ``logical_and(a, b)``: ``b`` is evaluated where the original's
    # ``and`` stopped at ``a`` (``(i < n).all() and (t[i] > 0).any()``).
    if isinstance(test, ast.BoolOp):
        computed += test.values[1:]
    modules = imported_modules(tree)
    if side_effect(computed, local_pure=pure_functions(tree), modules=modules) or may_raise(
        computed
    ):
        return None
    if any(unsafe_gradients(h) for h in helpers):
        return None
    # ``if torch.equal(a, b):`` alone: the shapes' test stays a Python ``if`` around the
    # selection, as a dtype's does, so tensors of other shapes never meet in ``torch.where``
    # (the original's other arm runs there, and raises what it raised).
    equal = _equal_args(source, test)
    if equal is None and mentions_equal(test):
        return None  # inside ``and``/``or``: no Python test of the shapes to keep around it
    cond = f"({equal[0]} == {equal[1]}).all()" if equal else tensor_condition(source, test)
    indent, comment = indent_and_comment(source, node, node.test)
    if cond is None or "\n" in cond:
        return None
    gate = f"{equal[0]}.shape == {equal[1]}.shape" if equal else None
    assigned = name if then is not None else None
    wrap = _static_wrap(source, static, indent, comment, assigned, after, gate)
    if wrap is None:
        return None
    if static or gate:
        indent, comment = indent + indent_step(indent), ""
    text = "".join(f"{indent}{ast.get_source_segment(source, h)}\n" for h in helpers)
    needs_flag = any(unsafe_gradients(a) for a in arms)
    if then is not None and mapped is not None:
        # ``xs = [f(v) for v in xs]`` under a condition: each element selected, the condition
        # computed once, before.
        (name, _), (_, v) = then, mapped
        flag = fresh_name(tree, f"{name}_cond")
        assert isinstance(value, ast.ListComp)
        safe_elt = _through_where(source, value.elt, flag, taken=True)
        if safe_elt is None:
            return None
        text += f"{indent}{flag} = {cond}{comment}\n"
        text += f"{indent}{name} = [{SELECT}({flag}, {safe_elt}, {v}) for {v} in {name}]\n"
        return _where_rewrite(path, node.lineno, end, wrap[0] + text + wrap[1])
    flag = fresh_name(tree, "cond")
    val = _through_where(source, value, flag, taken=True)
    alt = name if after is None and then is not None else None
    if after is not None:
        alt = _through_where(source, after, flag, taken=False)
    if val is None or alt is None or "\n" in val + alt:
        return None
    line = f"{indent}{head}{SELECT}({cond}, {val}, {alt})"
    if needs_flag or len(line.replace(SELECT, "torch.where")) > _LONG:
        text += f"{indent}{flag} = {cond}\n"  # the condition named on a line of its own
        line = f"{indent}{head}{SELECT}({flag}, {val}, {alt})"
    text += f"{line}{comment}\n"
    return _where_rewrite(path, node.lineno, end, wrap[0] + text + wrap[1])


def _static_wrap(
    source: str,
    static: list[ast.expr],
    indent: str,
    comment: str,
    name: str | None,
    after: ast.expr | None,
    gate: str | None = None,
) -> tuple[str, str] | None:
    """What goes before and after the selection where the condition opens with Python tests
    (``split_static``; ``gate``, one the rule made): ``if <those>:`` and, where the original
    had another arm, that arm as the original wrote it (``else: x = b``, or the ``return b``
    that followed)."""
    if not static and gate is None:
        return "", ""
    parts = [ast.get_source_segment(source, v) for v in static]
    if any(p is None or "\n" in p for p in parts):
        return None
    said = " and ".join(
        [
            *(
                f"({p})" if isinstance(v, (ast.BoolOp, ast.IfExp, ast.NamedExpr)) else str(p)
                for p, v in zip(parts, static, strict=True)
            ),
            *([gate] if gate else []),
        ]
    )
    other = "" if after is None else ast.get_source_segment(source, after)
    if other is None or "\n" in other:
        return None
    step = indent + indent_step(indent)
    tail = ""
    if after is not None:
        tail = f"{indent}else:\n{step}{name} = {other}\n" if name else f"{indent}return {other}\n"
    return f"{indent}if {said}:{comment}\n", tail


def _through_where(source: str, expr: ast.expr, flag: str, *, taken: bool) -> str | None:
    """``expr``'s text with the operand of each operation whose gradient can be infinite fed
    through ``torch.where(flag, operand, safe)`` (``taken``: the arm the flag selects; else
    ``torch.where(flag, safe, operand)``): on the path taken the operand is unchanged, bitwise,
    and on the other the operation sees a value with a finite gradient. None where such an
    operation has no safe form (a power) or two of them nest."""
    text = ast.get_source_segment(source, expr)
    if text is None:
        return None
    ops = unsafe_gradients(expr)
    if not ops:
        return text
    if expr.lineno != expr.end_lineno:
        return None
    spans = []
    for op in ops:
        found = safe_operand(op)
        if found is None:
            return None
        operand, safe = found
        segment = ast.get_source_segment(source, operand)
        if segment is None:
            return None
        # Columns are UTF-8 bytes, on the expression's one line.
        start, stop = (
            operand.col_offset - expr.col_offset,
            (operand.end_col_offset or 0) - (expr.col_offset),
        )
        picked = f"{segment}, {safe}" if taken else f"{safe}, {segment}"
        # Not one of the rule's selections (``SELECT``): it keeps an operand finite, its arms
        # a tensor and a number by design.
        spans.append((start, stop, f"torch.where({flag}, {picked})"))
    spans.sort(reverse=True)
    if any(a[0] < b[1] for a, b in itertools.pairwise(spans)):
        return None  # nested: the inner edit would move the outer's columns
    data = text.encode()
    for start, stop, new in spans:
        data = data[:start] + new.encode() + data[stop:]
    return data.decode()


_LONG = 99


def _where_rewrite(path: str, start: int, end: int, text: str) -> Rewrite:
    return Rewrite.selecting(
        "torch-where",
        "Select with torch.where instead of branching on a tensor",
        path,
        start,
        end,
        text,
        exact=True,
        branch=start,
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
        one = single_assign([s])
        if one is None or one[0] in outside or s.lineno != s.end_lineno:
            break
        out.append(s)
    return out
