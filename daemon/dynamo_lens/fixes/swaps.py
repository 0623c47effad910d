"""The rule for a branch on a tensor's value whose two arms make the same call and differ in one
argument only: Phi-3/Phi-4's LongRoPE picks its frequency table,

    if torch.max(position_ids) + 1 > self.original_max_position_embeddings:
        self.register_buffer("inv_freq", self.long_inv_freq, persistent=False)
    else:
        self.register_buffer("inv_freq", self.original_inv_freq, persistent=False)

becomes one call whose argument is selected (``torch.where``): the call still happens once, and
both tables stay as they were. Torch-free.

Not ``self.inv_freq.copy_(torch.where(...))``, which GraphMend writes: LongRoPE's
``original_inv_freq`` is the very tensor first registered as ``inv_freq``, so an in-place copy
overwrites the original table, and a later short call reads the long one. Whether two
attributes share storage is not something the source shows in general; a re-registration never
writes into a table, and verification measures what it costs in recompiles."""

from __future__ import annotations

import ast

from .branches import mentions_equal, split_static, tensor_condition
from .purity import imported_modules, may_raise, pure_functions, side_effect
from .registry import BREAKS, At, fix
from .rewrite import SELECT, Rewrite, indent_and_comment, source_lines, whole_lines


def _call(body: list[ast.stmt]) -> ast.Call | None:
    if len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Call):
        return body[0].value
    return None


def _one_difference(a: ast.Call, b: ast.Call) -> tuple[int | str, ast.expr, ast.expr] | None:
    """Where the two calls differ, when they are the same call but for one argument: its
    position (or keyword) and the two values."""
    if ast.dump(a.func) != ast.dump(b.func) or len(a.args) != len(b.args):
        return None
    if [k.arg for k in a.keywords] != [k.arg for k in b.keywords] or None in [
        k.arg for k in a.keywords
    ]:
        return None
    pairs: list[tuple[int | str, ast.expr, ast.expr]] = [
        (i, x, y) for i, (x, y) in enumerate(zip(a.args, b.args, strict=True))
    ]
    pairs += [(str(k.arg), k.value, m.value) for k, m in zip(a.keywords, b.keywords, strict=True)]
    if any(isinstance(x, ast.Starred) for _, x, _ in pairs):
        return None
    differ = [p for p in pairs if ast.dump(p[1]) != ast.dump(p[2])]
    return differ[0] if len(differ) == 1 else None


@fix("select-argument", BREAKS, rank=80, statement=True, selecting=True)
def select_argument(at: At) -> Rewrite | None:
    """``if c: f(..., a, ...) else: f(..., b, ...)`` becomes ``f(..., torch.where(c, a, b),
    ...)``; both values are computed, so they must only compute."""
    source, node, path, tree = at.source, at.stmt, at.path, at.tree
    if not isinstance(node, ast.If) or not node.orelse:
        return None
    a, b = _call(node.body), _call(node.orelse)
    if a is None or b is None or not whole_lines(source, node, node.orelse[-1]):
        return None
    found = _one_difference(a, b)
    if found is None or a.lineno != a.end_lineno:
        return None
    _, x, y = found
    static, test = split_static(node.test)
    if static:
        return None  # a dtype test would leave the call in one arm only: not this rule's
    computed = [x, y, *(test.values[1:] if isinstance(test, ast.BoolOp) else [])]
    modules = imported_modules(tree)
    if side_effect(computed, local_pure=pure_functions(tree), modules=modules) or may_raise(
        computed
    ):
        return None
    if mentions_equal(test):
        return None  # a shapes' test: the selection would compute the call on other shapes
    cond = tensor_condition(source, test)
    xs, ys = ast.get_source_segment(source, x), ast.get_source_segment(source, y)
    if cond is None or xs is None or ys is None or "\n" in cond + xs + ys:
        return None
    line = source_lines(source)[a.lineno - 1].rstrip("\r\n")
    # The argument's columns are UTF-8 bytes on the call's one line.
    raw = line.encode()
    new = (
        raw[: x.col_offset]
        + f"{SELECT}({cond}, {xs}, {ys})".encode()
        + raw[x.end_col_offset or 0 :]
    ).decode()
    indent, comment = indent_and_comment(source, node, node.test)
    text = indent + new.lstrip()
    if comment and "#" not in new:
        text += comment
    return Rewrite.selecting(
        "select-argument",
        "Make the call once, with its argument selected by torch.where instead of branching "
        "on a tensor",
        path,
        node.lineno,
        node.orelse[-1].end_lineno or node.orelse[-1].lineno,
        text + "\n",
        exact=True,
        branch=node.lineno,
    )
