"""A recompile on a tensor's size, fixed where the calls are made: the example marks that
dimension dynamic (``torch._dynamo.mark_dynamic``), so torch compiles one graph for every size
instead of one per size seen. Torch-free: verification shows torch compiles fewer frames for
the same calls, with equal outputs and no break added."""

from __future__ import annotations

import ast

from ..config import is_example_name
from ..findings import Kind, TargetId
from .registry import RECOMPILES, At, fix
from .rewrite import Rewrite, source_lines


def _returns(fn: ast.FunctionDef) -> list[ast.Return]:
    """The function's own returns (not those of functions or classes defined inside it)."""
    out: list[ast.Return] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return):
            out.append(node)
        elif not isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
        ):
            todo.extend(ast.iter_child_nodes(node))
    return out


@fix("mark-dynamic", RECOMPILES, rank=150)
def mark_dynamic(at: At) -> Rewrite | None:
    """For a recompile on argument ``arg``'s size at ``dim``, in a file whose example builds
    the calls: the example's one ``return`` marks that dimension dynamic in every call it
    returns (one call or a list of variants), then returns them as before."""
    finding, source, tree = at.finding, at.source, at.tree
    md = finding.data.get("mark_dynamic")
    if finding.kind is not Kind.RECOMPILE or md is None or "arg" not in md:
        return None
    if finding.target is None or "library" in finding.data:
        return None
    tid = TargetId.parse(finding.target)
    unit = tid.unit
    if not is_example_name(unit):
        return None  # a guessed or configured target: no call site of the user's to edit
    if tid.file and not finding.path.replace("\\", "/").endswith("/" + tid.file):
        return None  # the example is in another file than the finding: not this file's
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == unit]
    if len(defs) != 1:
        return None  # none, or defined twice: which one runs is not this rule's guess
    fn = defs[0]
    returns = _returns(fn)
    if len(returns) != 1:
        return None
    ret = returns[0]
    if ret.value is None:
        return None
    lines = source_lines(source)
    first = lines[ret.lineno - 1]
    if first[: ret.col_offset].strip() or (ret.end_lineno or ret.lineno) > len(lines):
        return None  # ``x = 1; return ...``: not a statement of its own line
    indent = first[: ret.col_offset]
    expr = ast.get_source_segment(source, ret.value)
    if expr is None:
        return None
    arg, dim, var = int(md["arg"]), int(md["dim"]), md["variable"]
    mine = md.get("calls")
    # Only this target's entries: another target of the example may branch on that size, and
    # its calls are not what this fix is verified on. Names no user code of the example can
    # read: they are bound after its last statement ran.
    pick = (
        f"[__calls[__i] for __i in {tuple(int(i) for i in mine)!r}]"
        if mine is not None
        else "__calls"
    )
    text = (
        f"{indent}__calls = {expr}\n"
        f"{indent}for __call in {pick} if isinstance(__calls, list) else [__calls]:\n"
        f"{indent}    torch._dynamo.mark_dynamic(__call[1][{arg}], {dim})\n"
        f"{indent}return __calls\n"
    )
    title = (
        f"Mark dim {dim} of `{var}` dynamic where {unit}() builds its calls "
        "(torch._dynamo.mark_dynamic): one graph for every size"
    )
    return Rewrite(
        "mark-dynamic", title, finding.path, ret.lineno, ret.end_lineno or ret.lineno, text, True
    )
