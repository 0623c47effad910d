"""A recompile's fix, verified against the recompile check that found it: the check run on
both versions (the original's kept from the analysis where it started from the same,
lastcheck.py), and what the rewrite's run shows against the original's (verify.py decides)."""

from __future__ import annotations

import ast
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..findings import Finding, Frame, Kind, SiteId
from ..fixes.catalogue import Rewrite
from ..texts.locate import Workspace
from . import lastcheck, recompiles
from .compiledseries import Series
from .usercode import Target


@dataclass(frozen=True)
class RecompileCheck:
    """The recompile check's settings, as the check that found a recompile ran it."""

    dynamic: bool | None
    limit: int
    probes: int


class Recompiled(NamedTuple):
    lines: Counter[tuple[str, int]]  # where the recompile check finds recompiles, how many
    compiles: int  # frames torch compiled
    error: str  # the first call that raised, as said; "" when every call ran
    findings: list[Finding]  # the check's recompile findings
    # Torch logged no break over the calls, compiled no resume function and gave up on no
    # frame: the check's calls ran in whole graphs.
    unbroken: bool
    recompiles: int  # the compiles torch gave a reason to recompile for
    grad: bool  # whether the calls ran with gradients


def recompile_lines(
    t: Target,
    ws: Workspace,
    how: RecompileCheck,
    label: str,
    anchor: Frame | None,
    checked: str = "",
) -> Recompiled:
    """The recompile check's findings by line, the frames torch compiled, and whether a call
    raised (where a variant raises, the check stops there). ``checked``: the file the check
    ran on, whose last check is this one where it started from the same (lastcheck.py)."""
    result = recalled(t, ws, how, checked) if checked else None
    if result is None:
        result = recompiles.find_recompiles(
            t,
            ws,
            name=label,
            dynamic=how.dynamic,
            limit=how.limit,
            probes=how.probes,
            compiled_frames=[t.path],
            anchor=anchor,
            measure=False,  # how severe a recompile is: the analysis's question, not this one's
        )
    return _recompiled(result)


def recalled_lines(
    t: Target, ws: Workspace, how: RecompileCheck, checked: str
) -> Recompiled | None:
    """The last recompile check of ``t`` in the file ``checked``, as recompile_lines says it,
    where it started from what ``t`` is now; else None (nothing run)."""
    result = recalled(t, ws, how, checked)
    return _recompiled(result) if result is not None else None


def recalled(
    t: Target, ws: Workspace, how: RecompileCheck, checked: str
) -> recompiles.RecompileResult | None:
    return lastcheck.recall_recompiles(checked, t, ws, (how.dynamic, how.limit, how.probes))


def _recompiled(result: recompiles.RecompileResult) -> Recompiled:
    found = [f for f in result.findings if f.kind is Kind.RECOMPILE]
    error = ""
    if result.errors:
        exc, call = result.errors[0]
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        error = f"{recompiles.describe_call(call)} raised {type(exc).__name__}: {first}"
    return Recompiled(
        _lines(found),
        result.compiles,
        error,
        found,
        result.unbroken,
        result.recompiles,
        result.grad,
    )


def _lines(found: list[Finding]) -> Counter[tuple[str, int]]:
    lines: Counter[tuple[str, int]] = Counter()
    for f in found:  # the recompiles torch made there, as the check counted them
        lines[(os.path.realpath(f.path), f.line)] += int(f.data.get("recompiles") or 1)
    return lines


def series_check(
    run: Callable[[], Series],
    t: Target,
    ws: Workspace,
    how: RecompileCheck,
    label: str,
    anchor: Frame | None,
    grad: bool,
) -> tuple[Series | None, Recompiled]:
    """The recompile check's answer from the compiled series ``run`` makes, whose first calls
    are the check's declared variants compiled as the check compiles them (``dynamic`` unset):
    one compile of a version where the check and the series made two. The series itself, or
    None where a call raised (the answer then says so, as the check's does)."""
    try:
        s = run()
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        said = f"a call of the series raised {type(exc).__name__}: {first}"
        return None, Recompiled(Counter(), 0, said, [], False, 0, grad)
    findings, compiles, recompiled = recompiles.from_metrics(
        t, ws, s.metrics, s.after_call, name=label, limit=how.limit, anchor=anchor
    )
    found = [f for f in findings if f.kind is Kind.RECOMPILE]
    # As the check's: no break, no resume function, no frame given up on or skipped.
    unbroken = not s.breaks and all(
        not m.get("fail_type")
        and not str(m.get("co_name") or "").startswith("torch_dynamo_resume")
        and m.get("graph_op_count") is not None
        for m in s.metrics
    )
    return s, Recompiled(_lines(found), compiles, "", found, unbroken, recompiled, grad)


def recompile_gone(
    add: Callable[[str, bool, str], bool],
    site: SiteId,
    rewrite: Rewrite,
    edited: Path,
    original: Recompiled,
    fixed: Recompiled,
    source: str,
    bystander: bool = False,
) -> tuple[bool, list[Finding]]:
    """The recompile check again, on the rewrite (``fixed``): every call it made still runs (a
    call that raises recompiles nothing, which proves nothing), nothing at the site's line, no
    line recompiling that did not before, and torch compiled fewer frames for the same calls.
    Each check goes to ``add`` (the verdict's); where one fails, what the rewrite uncovered (a
    recompile a chained fix may take on)."""
    now, compiles, error, found = fixed.lines, fixed.compiles, fixed.error, fixed.findings
    before, compiles0, error0 = original.lines, original.compiles, original.error
    # Both must run every call: where the original's calls raise already, fewer compiles and
    # no recompile prove nothing about the rewrite (it may raise earlier still).
    why = error or (f"the original's calls raise: {error0}" if error0 else "")
    if not add("calls still run", not why, why):
        return False, []
    same_file = os.path.realpath(site[0]) == os.path.realpath(edited)
    at = (os.path.realpath(site[0]), (rewrite.new_line(site[1]) if same_file else site[1]) or 0)
    # Fewer recompiles at the site, or none: a setting that makes a counter dynamic after its
    # first change still recompiles once there, and compiles fewer frames (checked below).
    left, was = now.get(at, 0), before.get((os.path.realpath(site[0]), site[1]), 0)
    fewer_there = left == 0 or left < was or (bystander and left <= was)
    said = "gone" if left == 0 else f"torch recompiles there {left} time(s), the original {was}"
    if not add("fewer recompiles there", fewer_there, said):
        # What recompiles there now may be another argument (a mask whose length varied with
        # the size the rewrite marked): a chain tries its fix (engine/fixing.py).
        return False, [f for f in found if (os.path.realpath(f.path), f.line) == at]
    moved = {(p, rewrite.new_line(ln) if p == os.path.realpath(edited) else ln) for p, ln in before}
    # A line of the function an original site is in is the same frame's recompile, blamed on
    # the guard torch now fails (``if x.size(0) == 6`` once the size is dynamic) rather than
    # on the parameter: not moved elsewhere. ``fewer compiles`` below still decides.
    mine = os.path.realpath(edited)
    # The rewritten text's functions: the lines torch reports are the shadow's, not the file's.
    spans = _function_spans(rewrite.apply(source))
    home = {_innermost(spans, ln) for p, ln in moved if p == mine and ln is not None} - {None}
    unseen = {k for k in now if k not in moved}
    same_frame = {(p, ln) for p, ln in unseen if p == mine and _innermost(spans, ln) in home}
    new = sorted(unseen - same_frame)
    detail = ", ".join(f"{os.path.basename(p)}:{ln}" for p, ln in new[:3])
    if not add("no new recompile site", not new, detail):
        return False, [f for f in found if (os.path.realpath(f.path), f.line) in new]
    fewer = compiles < compiles0 or (bystander and compiles <= compiles0)
    name = "no more compiles" if bystander else "fewer compiles"
    if add(name, fewer, f"{compiles} frame(s) compiled, original {compiles0}"):
        return True, []
    # What still recompiles there may have a fix of its own (a number beside a size the
    # rewrite made dynamic): a chain tries it (engine/fixing.py).
    return False, [f for f in found if (os.path.realpath(f.path), f.line) in same_frame]


def _function_spans(text: str) -> list[tuple[int, int]]:
    """(first line, last line) of every function ``text`` defines, outer before inner; none
    where it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    fns = (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return sorted(((n.lineno, n.end_lineno or n.lineno) for n in fns), key=lambda s: (s[0], -s[1]))


def _innermost(spans: list[tuple[int, int]], line: int) -> tuple[int, int] | None:
    """The innermost function span holding ``line``; None at module level."""
    inside = [s for s in spans if s[0] <= line <= s[1]]
    return inside[-1] if inside else None
