"""Torch's guard-failure texts, read without torch: what a recompile's failed guard was about
(a size, a dtype, a Python value, None-ness, ...), in the user's words, and its fix.

The worker's recompile check and the readers of a run's trace share these.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..findings import Finding, FindingData, Frame, Kind, Severity

# A guard's line is short; a reason from a trace made anywhere may not be. Every regex below
# runs on a bounded slice, and none can backtrack over it quadratically.
MAX_REASON_CHARS = 64 * 1024
MAX_GUARD_CHARS = 2048
_COMPILE_ID = re.compile(r"^\d+/\d+:\s*")
LOC_RE = re.compile(r"#\s+(?P<tail>[^\s:]+):(?P<line>\d{1,8}) in (?P<fn>[\w<>]+)")
FILE_RE = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d{1,8}), in (?P<fn>\S+)')
_SIZE_RE = re.compile(
    r"tensor '(?P<var>.{1,200}?)' size mismatch at index (?P<dim>\d+)\. "
    r"expected (?P<exp>\d+), actual (?P<act>\d+)"
)
_DTYPE_RE = re.compile(
    r"tensor '(?P<var>.{1,200}?)' dtype mismatch\. expected (?P<exp>\w+), actual "
    r"(?P<act>\w+)"
)
_TENSOR_META_RE = re.compile(r"tensor '(?P<var>.{1,200}?)' (?P<what>[\w ]{1,40}?) mismatch")
_NONE_RE = re.compile(r"^(?P<var>\S+) is (?P<neg>not )?None$")
# torch >= 2.13 words a tensor-then-None change as a type check on the tensor guard.
_NONE_TYPE_RE = re.compile(
    r"expected type of '(?P<var>.{1,200}?)' to be a tensor type, '? ?but found <class 'NoneType'>"
)
_LEN_RE = re.compile(r"^len\((?P<var>.+)\) == (?P<val>\d+)$")
# A float's exponent keeps its sign (``eps == 1e-05``): without it the guard was no value's.
_VALUE_RE = re.compile(r"^(?P<var>[^\s=<>!]+) == (?P<val>-?[\w.']+(?:[eE][-+]\d+)?)$")
_ID_RE = re.compile(r"___check_obj_id\((?P<var>[^,]+),")
_GLOBAL_RE = re.compile(r"GLOBAL_STATE changed: (?P<what>[\w, ]+)")
HINT_RE = re.compile(r"\(HINT: ([\s\S]{1,2000}?)\)\s*(?:\n|$)")
_SIZE_EXPR_RE = re.compile(r"(?P<var>[\w\[\]'.]{1,200})\.size\(\)\[(?P<dim>\d+)\]")


@dataclass
class Guard:
    kind: str  # size | size-range | dtype | tensor | none | len | value | attr | identity
    # | global | guard
    var: str
    text: str
    seen: str | None = None
    dim: int | None = None


def split_reason(first: str) -> tuple[str, str]:
    """(guard, what follows its ``  # ``) of a recompile reason's first line, in linear time:
    ``"0/1: L['x'] == 3  # return x * n  # model.py:5 in f"`` -> ``("L['x'] == 3", ...)``."""
    line = _COMPILE_ID.sub("", first[:MAX_GUARD_CHARS], count=1)
    j = line.find("#")
    while j >= 0:
        before = j >= 2 and line[j - 1].isspace() and line[j - 2].isspace()
        if before and j + 1 < len(line) and line[j + 1].isspace():
            k = j
            while k > 0 and line[k - 1].isspace():
                k -= 1
            return line[:k], line[j + 1 :].strip()
        j = line.find("#", j + 1)
    return line, ""


def frames_in(reason: str) -> list[tuple[str, int, str]]:
    """(path, line, function) of each ``File "...", line N, in f`` a reason quotes."""
    return [
        (m["path"], int(m["line"]), m["fn"]) for m in FILE_RE.finditer(reason[:MAX_REASON_CHARS])
    ]


def _plain(var: str) -> str:
    """``L['x']`` -> ``x``; ``L['self'].max_len`` -> ``self.max_len``."""
    var = re.sub(r"\._modules\['([^']+)'\]", r".\1", var)
    return re.sub(r"[LG]\['([^']+)'\]", r"\1", var)


def classify(guard_text: str) -> Guard:
    g = guard_text[:MAX_GUARD_CHARS].strip()
    if m := _SIZE_RE.search(g):
        return Guard("size", _plain(m["var"]), g, m["act"], int(m["dim"]))
    if m := _DTYPE_RE.search(g):
        return Guard("dtype", _plain(m["var"]), g, m["act"])
    if m := _GLOBAL_RE.search(g):
        return Guard("global", m["what"].strip(), g, m["what"].strip())
    if m := _ID_RE.search(g):
        return Guard("identity", _plain(m["var"].strip()), g)
    if m := _NONE_TYPE_RE.search(g):
        return Guard("none", _plain(m["var"]), g, "None")
    if m := _TENSOR_META_RE.search(g):
        return Guard("tensor", _plain(m["var"]), g, m["what"])
    if m := _NONE_RE.match(g):
        return Guard("none", _plain(m["var"]), g, "None" if m["neg"] else "a value")
    if m := _LEN_RE.match(g):
        return Guard("len", _plain(m["var"]), g, m["val"])
    if m := _SIZE_EXPR_RE.search(g):
        return Guard("size-range", _plain(m["var"]), g, None, int(m["dim"]))
    if m := _VALUE_RE.match(g):
        var = _plain(m["var"])
        return Guard("attr" if "." in var else "value", var, g, m["val"])
    return Guard("guard", _plain(re.sub(r"\d+", "N", g)), g)


FIX = {
    "size": "Mark the dimension dynamic before the first call: "
    "`torch._dynamo.mark_dynamic({var}, {dim})`, or compile with `dynamic=True`.",
    "size-range": "Python control flow on a dynamic size specialises the graph: use "
    "`torch._dynamo.mark_unbacked({var}, {dim})` or make the branch tensor-valued (`torch.where`).",
    "dtype": "Cast `{var}` to one dtype before the compiled call: each dtype is a separate graph.",
    "tensor": "Keep `{var}`'s {seen} stable across calls (every change is a new graph).",
    "none": "Always pass a tensor for `{var}` (for example an all-ones mask) so both cases share "
    "one graph, or compile the two cases as separate functions.",
    "len": "Keep the length of `{var}` stable: pad it, or stack the items into one tensor.",
    "value": "Pass `{var}` as a tensor (`torch.tensor({var})`) instead of a Python number, or "
    "compile with `dynamic=True`; a Python number used in `range()` or `if` specialises anyway.",
    "attr": "`{var}` is a Python attribute read in the compiled code and guarded on; keep it "
    "constant, or store it in a tensor buffer.",
    "identity": "`{var}` is a new object on each call (a function, closure or module made "
    "inside the call); create it once, outside the compiled code.",
    "global": "The calls switch torch's global state ({seen}) between calls: keep it the same "
    "for every call of the compiled code, or compile each mode separately.",
    "guard": "Keep the guarded value stable across calls (torch's guard is in the explanation).",
}


# Values torch carries across a graph break into the function's resumed part, which it names
# by their stack slot (``___stack0``): no name of the user's exists for them.
_STACK_VAR = re.compile(r"^___stack(?P<n>\d+)")


def fix(g: Guard) -> str:
    """What to do about a guard, in the user's names."""
    if _STACK_VAR.match(g.var):
        return (
            "The value is computed before a graph break and carried into the code after it, "
            "where torch guards on it: remove the break before it (see this function's graph "
            "break), or keep the value the same on every call."
        )
    return FIX[g.kind].format(var=g.var, dim=g.dim if g.dim is not None else 0, seen=g.seen)


def _name(var: str) -> str:
    m = _STACK_VAR.match(var)
    if m is None:
        return f"`{var}`"
    return f"a value carried across a graph break (torch's `{var}`)"


def what(g: Guard) -> str:
    v = _name(g.var)
    return {
        "size": f"the size of {v} at dim {g.dim}",
        "size-range": f"a branch on the dynamic size `{g.var}.size({g.dim})`",
        "dtype": f"the dtype of {v}",
        "tensor": f"the {g.seen} of {v}",
        "none": f"whether {v} is None",
        "len": f"the length of {v}",
        "value": f"the Python value of {v}",
        "attr": f"the attribute {v}",
        "identity": f"the identity of {v}",
        "global": f"torch's global state ({g.var})",
        "guard": "a value Dynamo guards on",
    }[g.kind]


def headline(
    what: str,
    count: int,
    *,
    then: str = "",
    measured: str = "",
    fresh: str = "",
    seen: Sequence[str] = (),
    by_value: bool = False,
    limit: int | None = None,
    limit_hit: bool = False,
) -> tuple[str, Severity]:
    """A recompile's message and severity, worded once for the worker's input variants and a
    run's trace: one recompile that does not repeat is information ("Recompile: … changed");
    more, one that repeats for a fresh value (``measured="repeats"``, the call ``fresh``), or
    the limit is a risk. ``what``: ``what(g)``, with the library frame where it guards;
    ``then``: what became of a single change; ``seen``: the values it specialised on
    (``by_value``: a Python value or attribute) or the new values of a size."""
    values = ", ".join(dict.fromkeys(seen))
    if measured == "repeats":
        # Seen once, then again with a fresh value: it will go on.
        message = f"Recompile risk: {what} is specialised; every new value recompiles"
        message += f" (measured: the fresh call {fresh} compiled again)"
        if values and by_value:
            message += f"; specialised on {values}"
        return message, Severity.WARNING
    if count <= 1 and not limit_hit:
        message = f"Recompile: {what} changed" + (f"; one recompile, {then}" if then else "")
        if measured == "once":
            message += " (measured: a fresh value did not recompile)"
        return message, Severity.INFORMATION
    # The user's names only; torch's raw guard text (`L['args'][1]`) goes in the explanation.
    message = f"Recompile risk: {what} is specialised; {count} recompile" + "s" * (count != 1)
    if values:
        message += f" (specialised on {values})" if by_value else f" (new values: {values})"
    if limit_hit:
        of = f" of {limit}" if limit else ""
        message += f"; hit the recompile limit{of}, later calls fall back to eager"
    return message, Severity.WARNING


def buckets(g: Guard, seen: Sequence[str]) -> str:
    """Padding, offered where a dimension took three or more sizes: the smallest multiple (of
    8, 16, 32, 64) that halves the graphs, with the most a call is padded by. Not a rewrite:
    what the padding means (a mask, the loss over padded rows) is the user's to decide."""
    sizes = sorted({int(v) for v in seen if str(v).isdigit() and int(v) > 0})
    if len(sizes) < 3 or g.dim is None:
        return ""
    for m in (8, 16, 32, 64):
        padded = sorted({-(-s // m) * m for s in sizes})
        if len(padded) * 2 <= len(sizes):
            worst = max((-(-s // m) * m - s) / s for s in sizes)
            return (
                f"Or pad dim {g.dim} of `{_name(g.var)}` to a multiple of {m}: the sizes seen "
                f"({', '.join(map(str, sizes))}) would compile {len(padded)} graph"
                + "s"
                * (len(padded) != 1)
                + f" instead of {len(sizes)}, padding a call by at most {worst:.0%} "
                "(offered, not applied: mask what the padding must not change)."
            )
    return ""


def facts(g: Guard, origin: str = "") -> FindingData:
    """What a recompile finding carries about its guard, wherever it was found."""
    data: FindingData = {"guard": g.text, "guard_kind": g.kind, "variable": g.var}
    if origin:
        data["library"] = origin
    return data


def finding(
    at: Frame,
    g: Guard,
    count: int,
    *,
    origin: str = "",
    stack: list[Frame],
    explanation: str,
    hints: Sequence[str] = (),
    data: FindingData | None = None,
    target: str | None = None,
    span: tuple[int, int, int, int] | None = None,
    **wording: Any,
) -> Finding:
    """A recompile at ``at`` on guard ``g``, seen ``count`` times: the one place a recompile
    finding is made, by the worker's check and by a run's trace, as ``breaktext.finding`` is
    for a break. ``origin``: the library line the guard sits in, named in the message;
    ``span``: (line, column, end line, end column) where the caller knows better than ``at``'s
    own range; ``wording``: ``headline``'s keywords (``then``, ``measured``, ``limit_hit``...);
    ``hints``: after the guard's own fix."""
    what_ = what(g) + (f" in {origin}" if origin else "")
    message, severity = headline(what_, count, **wording)
    line, column, end_line, end_column = span or at.span()
    return Finding(
        Kind.RECOMPILE,
        severity,
        at.path,
        line,
        column,
        end_line,
        end_column,
        message,
        explanation=explanation,
        hints=[fix(g), *hints],
        stack=stack,
        target=target,
        data={**facts(g, origin), **(data or {})},
    )
