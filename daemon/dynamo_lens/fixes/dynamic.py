"""Recompiles fixed where the calls are made, in the example that builds them: a tensor's size
marked dynamic (``torch._dynamo.mark_dynamic``), so torch compiles one graph for every size
instead of one per size seen; a Python number passed as a 0-d tensor, so torch traces it as
data instead of specialising on it. Torch-free: verification shows torch compiles fewer frames
for the same calls, with equal outputs, no break added, and no slower once warm."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config import is_example_name
from ..findings import Finding, Kind, TargetId
from .registry import RECOMPILES, At, fix
from .rewrite import Rewrite, indent_step, own_nodes, source_lines


def _returns(fn: ast.FunctionDef) -> list[ast.Return]:
    """The function's own returns (not those of functions or classes defined inside it)."""
    return [n for n in own_nodes(fn) if isinstance(n, ast.Return)]


@dataclass(frozen=True)
class _Return:
    """The example's one ``return``, on lines of its own: where a fix rebuilds its calls."""

    unit: str
    start: int
    end: int
    indent: str
    expr: str


def _example_return(finding: Finding, source: str, tree: ast.Module) -> _Return | None:
    """The ``return`` of the example that made ``finding``'s target, in this file, defined once
    and returning once; None where there is no call site of the user's to edit."""
    if finding.kind is not Kind.RECOMPILE or finding.target is None or "library" in finding.data:
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
    returns = _returns(defs[0])
    if len(returns) != 1:
        return None
    ret = returns[0]
    value = ret.value
    if value is None:
        return None
    lines = source_lines(source)
    first = lines[ret.lineno - 1]
    end = ret.end_lineno or ret.lineno
    if first[: ret.col_offset].strip() or end > len(lines):
        return None  # ``x = 1; return ...``: not a statement of its own line
    after = lines[end - 1][ret.end_col_offset or 0 :].strip()
    if after and not after.startswith("#"):
        return None  # ``return ...; more``: the whole line is replaced, and ``more`` with it
    expr = ast.get_source_segment(source, value)
    if expr is None:
        return None
    return _Return(unit, ret.lineno, ret.end_lineno or ret.lineno, first[: ret.col_offset], expr)


def _calls_bound(ret: _Return) -> str:
    """``__calls`` bound to what the example returns: already so where another of these
    rules rewrote the return first (a chained fix)."""
    return "" if ret.expr == "__calls" else f"{ret.indent}__calls = {ret.expr}\n"


def _pick(mine: list[int] | None) -> str:
    """Only this target's entries: another target of the example may use that argument
    differently, and its calls are not what the fix is verified on. Names no user code of the
    example can read: they are bound after its last statement ran."""
    return f"[__calls[__i] for __i in {tuple(int(i) for i in mine)!r}]" if mine else "__calls"


def _argument(data: Mapping[str, Any], call: str) -> str | None:
    """The expression for the argument ``data`` names (``arg``: a position in the entry's args
    tuple, ``keyword``: a key of its kwargs dict) in the example entry ``call``."""
    path = data.get("path") or []
    if not isinstance(path, list) or any(type(k) not in (int, str) for k in path):
        return None
    inside = "".join(f"[{k!r}]" for k in path)  # repr: a literal, whatever the key holds
    if isinstance(data.get("arg"), int):
        return f"{call}[1][{int(data['arg'])}]{inside}"
    if isinstance(data.get("keyword"), str) and str(data["keyword"]).isidentifier():
        return f"{call}[2][{str(data['keyword'])!r}]{inside}"
    return None


def _marking(at: At, rule: str, api: str) -> Rewrite | None:
    """The example's one ``return`` marks dim ``dim`` of argument ``arg`` with ``api`` in every
    call it returns (one call or a list of variants), then returns them as before."""
    md = at.finding.data.get("mark_dynamic")
    ret = _example_return(at.finding, at.source, at.tree)
    if md is None or ret is None:
        return None
    where = _argument(md, "__call")
    also = [(_argument(a, "__call"), a.get("dim")) for a in md.get("also", [])]
    if where is None or any(w is None or not isinstance(d, int) for w, d in also):
        return None
    dim, var = int(md["dim"]), md["variable"]
    i = ret.indent
    pick = _pick(md.get("calls"))
    step = i + indent_step(i)
    marks = "".join(f"{step}torch._dynamo.{api}({w}, {d})\n" for w, d in [(where, dim), *also])
    text = (
        _calls_bound(ret)
        + f"{i}for __call in {pick} if isinstance(__calls, list) else [__calls]:\n"
        + marks
        + f"{i}return __calls\n"
    )
    said = (
        "one graph for every size"
        if api == "mark_dynamic"
        else "one graph for the sizes the code does not branch on"
    )
    more = f" (and {len(also)} more size(s) that vary with it)" if also else ""
    title = (
        f"Mark dim {dim} of `{var}` dynamic{more} where {ret.unit}() builds its calls "
        f"(torch._dynamo.{api}): {said}"
    )
    return Rewrite(rule, title, at.path, ret.start, ret.end, text, True)


@fix("mark-dynamic", RECOMPILES, rank=150, edits_calls=True)
def mark_dynamic(at: At) -> Rewrite | None:
    """For a recompile on an argument's size at ``dim`` (passed by position or by keyword), in
    a file whose example builds the calls: the example's one ``return`` marks that dimension
    dynamic in every call it returns (one call or a list of variants), then returns them as
    before."""
    return _marking(at, "mark-dynamic", "mark_dynamic")


@fix("maybe-mark-dynamic", RECOMPILES, rank=155, edits_calls=True)
def maybe_mark_dynamic(at: At) -> Rewrite | None:
    """Tried after ``mark-dynamic``, for a dimension the code branches on (``if x.size(0) ==
    6``), where ``mark_dynamic`` makes torch raise (it promised every size one graph): the
    same marking with ``torch._dynamo.maybe_mark_dynamic``, which lets torch specialise where
    the code needs it. Torch then compiles one graph for the sizes outside the branch, and one
    per size the code singles out; verification counts the frames."""
    return _marking(at, "maybe-mark-dynamic", "maybe_mark_dynamic")


# Where a number and a 0-d tensor give the same result, whatever the number: the other operand
# of ``+ - * /`` is a tensor (its dtype decides; the number is cast to it either way). Not
# ``**`` (an int exponent takes another path, ``2 ** tensor(-1)`` is 0), ``//`` or ``%``.
_SAME_WITH_A_TENSOR = (ast.Add, ast.Sub, ast.Mult, ast.Div)


def _only_arithmetic(at: At, name: str) -> bool:
    """Whether every use of parameter ``name`` in the function that takes it (the one around
    the finding's line) is an operand of ``+ - * /`` whose other operand is no constant: a
    Python ``if``, a call (``range``, ``int``, a dict's ``get``), an index, a string, a
    comparison, an assignment to it (``n *= 2`` would write into the caller's tensor) or a
    power would each see a tensor where the number was."""
    fns = [
        n
        for n in ast.walk(at.tree)
        if isinstance(n, ast.FunctionDef)
        and n.lineno <= at.finding.line <= (n.end_lineno or n.lineno)
        and name in {a.arg for a in (*n.args.posonlyargs, *n.args.args, *n.args.kwonlyargs)}
    ]
    if not fns:
        return False
    fn = max(fns, key=lambda n: n.lineno)
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(fn):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    uses = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name]
    if not uses:
        return False
    for use in uses:
        parent = parents.get(id(use))
        if not isinstance(use.ctx, ast.Load) or not isinstance(parent, ast.BinOp):
            return False
        if not isinstance(parent.op, _SAME_WITH_A_TENSOR):
            return False
        other = parent.right if parent.left is use else parent.left
        if isinstance(other, ast.Constant) or (
            isinstance(other, ast.UnaryOp) and isinstance(other.operand, ast.Constant)
        ):
            return False
    return True


@fix("scalar-tensor", RECOMPILES, rank=160, edits_calls=True)
def scalar_tensor(at: At) -> Rewrite | None:
    """For a recompile on a Python number the target takes by position or by keyword
    (``L['n'] == 2``), in a file whose example builds the calls: the example passes it as a
    0-d tensor, of Python's own precision (float64 for a float, int64 for an int, so that
    arithmetic with it gives what the number gave), and torch traces it as data instead of a
    constant. Where the code needs a Python number (``range(n)``, a shape), torch breaks or
    raises: verification says so. Callers outside the example must pass a tensor too, as the
    title says."""
    sa = at.finding.data.get("scalar_arg")
    ret = _example_return(at.finding, at.source, at.tree)
    if sa is None or ret is None or not _only_arithmetic(at, sa["variable"]):
        return None
    where = _argument(sa, "__c")
    if where is None:
        return None
    var = sa["variable"]
    if "arg" in sa:
        arg = int(sa["arg"])
        rebuilt = f"(__c[0], (*__c[1][:{arg}], __t, *__c[1][{arg + 1}:]), *__c[2:])"
    else:
        rebuilt = f"(__c[0], __c[1], {{**__c[2], {str(sa['keyword'])!r}: __t}})"
    mine = sa.get("calls")
    which = f"{tuple(int(i) for i in mine)!r}" if mine else "range(len(__each))"
    i = ret.indent
    j = i + indent_step(i)
    # A new list: the example may return a list it keeps (a memo), which must stay as it was.
    text = (
        _calls_bound(ret)
        + f"{i}__each = list(__calls) if isinstance(__calls, list) else [__calls]\n"
        f"{i}for __i in {which}:\n"
        f"{j}__c = __each[__i]\n"
        f"{j}__n = {where}\n"
        f"{j}__d = torch.float64 if isinstance(__n, float) else torch.int64\n"
        f"{j}__t = torch.tensor(__n, dtype=__d)\n"
        f"{j}__each[__i] = {rebuilt}\n"
        f"{i}return __each if isinstance(__calls, list) else __each[0]\n"
    )
    title = (
        f"Pass `{var}` as a 0-d tensor where {ret.unit}() builds its calls: one graph for "
        "every value (callers elsewhere must pass a tensor too)"
    )
    return Rewrite("scalar-tensor", title, at.path, ret.start, ret.end, text, True)
