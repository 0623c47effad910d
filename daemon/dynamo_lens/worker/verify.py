"""Is a rewrite a fix, in the user's own setting? Both versions of the target run here, the
original from the file and the rewrite from a shadow of it (shadow.py), and a rewrite is
verified only when torch shows all of these:

- ``break gone``: the break it was for no longer happens (for a recompile, ``recompile gone``:
  torch's recompile check, the one that found it, finds none at its line, and ``no new
  recompile site``: none anywhere the original had none);
- ``no new break``: every break left was there before, at its moved line;
- ``outputs equal``: the rewritten target's eager outputs (and gradients, where it trains) equal
  the original's, with the original's weights and inputs and the same seed: bitwise for an exact
  rewrite, else within the dtype's tolerance;
- ``compiled equal``: the compiled rewrite agrees with the original in eager, within tolerance;
- ``no break on later calls``: over the same calls as below, torch breaks neither at the site
  again nor anywhere the original did not (a rewrite can make a recompile break);
- ``no new recompile``: over the same calls (the first again, one with fresh values, each
  declared variant), torch recompiles no frame more often than it did for the original.
"""

from __future__ import annotations

import dataclasses
import os
import types
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils._pytree import tree_map

from ..findings import Finding, Frame, Kind
from ..fixes.catalogue import RECOMPILE_SITE, Rewrite
from ..texts.locate import Workspace
from . import lastcheck, modelstate, recompiles, torchcompat
from .breaks import anchor_of, collect_sites, find_breaks, to_finding
from .equivalence import compare, forward_and_grads, trains
from .shadow import import_shadowed, shadowed
from .tracecapture import GraphBreakLog
from .usercode import Call, Target, eager_of, import_file, purge_workspace_modules


@dataclass
class Verdict:
    rewrite: Rewrite
    target: str
    verified: bool = False
    checks: list[dict[str, Any]] = field(default_factory=list)  # name, ok, detail

    def add(self, name: str, ok: bool, detail: str = "") -> bool:
        self.checks.append({"name": name, "ok": ok, "detail": detail})
        return ok


def _clone(call: Call) -> Call:
    def c(v: Any) -> Any:
        return (
            v.detach().clone().requires_grad_(v.requires_grad) if isinstance(v, torch.Tensor) else v
        )

    return Call(tree_map(c, call.args), tree_map(c, call.kwargs))


def _same_shape_fresh(call: Call) -> Call:
    """The same call with new random values of the same shapes and dtypes."""

    def fresh(v: Any) -> Any:
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            return torch.randn_like(v).requires_grad_(v.requires_grad)
        return v

    return Call(tree_map(fresh, call.args), tree_map(fresh, call.kwargs))


def _break_keys(findings: list[Finding]) -> Counter[tuple[str, int, str]]:
    """Breaks, and frames torch then runs eagerly (a break in a loop): a rewrite that turns a
    break into a skipped frame has not removed it."""
    return Counter(
        (os.path.realpath(f.path), f.line, str(f.data.get("gb_type", "")))
        for f in findings
        if f.kind in (Kind.GRAPH_BREAK, Kind.FALLBACK)
    )


def _at_site(f: Finding, site: tuple[str, int, str], rewrite: Rewrite) -> bool:
    """Whether ``f`` (found in the rewritten code) is the break at ``site``: on the rewritten
    lines, or where the site's line moved to (a rewrite elsewhere in the file, such as a
    setting after the imports, leaves the site's line in place)."""
    if os.path.realpath(f.path) != os.path.realpath(site[0]):
        return False
    if str(f.data.get("gb_type", "")) != site[2]:
        return False
    if rewrite.start <= f.line < rewrite.start + rewrite.text.count("\n"):
        return True
    same_file = os.path.realpath(site[0]) == os.path.realpath(rewrite.path)
    return f.line == (rewrite.new_line(site[1]) if same_file else site[1])


@dataclass
class _Series:
    out: Any  # the first call's outputs
    grads: dict[str, torch.Tensor]  # and gradients
    recompiles: int  # frames torch compiled again
    breaks: list[Finding]  # every break torch logged over the calls


def _compiled_series(
    t: Target,
    series: list[Call],
    backend: Any,
    grads: bool,
    ws: Workspace,
    label: str,
    anchor: Frame | None,
) -> _Series:
    """``fn`` compiled and called over ``series`` as it runs (gradients too where it trains):
    the first call's outputs and gradients, the frames torch compiled again (its compilation
    metrics, by code object), and the breaks of every compile, later calls' included (a
    rewrite can make a recompile break where the first call did not)."""
    torch._dynamo.reset()
    torchcompat.clear_compilation_metrics()
    compiled = torch.compile(t.fn, backend=backend)
    first: tuple[Any, dict[str, torch.Tensor]] | None = None
    with GraphBreakLog() as cap:
        for call in series:
            torch.manual_seed(0)
            got = forward_and_grads(compiled, _clone(call), grads, params_of=t.fn)
            first = first or got
    seen = Counter(
        (str(m.get("co_filename")), str(m.get("co_firstlineno")), str(m.get("co_name")))
        for m in torchcompat.compilation_metrics()
    )
    found = [to_finding(s, label) for s in collect_sites(None, cap, ws, anchor)]
    torch._dynamo.reset()
    assert first is not None
    return _Series(first[0], first[1], sum(n - 1 for n in seen.values()), found)


def _recompile_gone(
    v: Verdict,
    site: tuple[str, int, str],
    rewrite: Rewrite,
    edited: Path,
    before: Counter[tuple[str, int]],
    fixed: Target,
    ws: Workspace,
    how: RecompileCheck,
    anchor: Frame | None,
) -> bool:
    """The recompile check again, on the rewrite: nothing at the site's line, and no line
    recompiling that did not before."""
    now = _recompile_lines(fixed, ws, how, v.target, anchor)
    same_file = os.path.realpath(site[0]) == os.path.realpath(edited)
    at = (os.path.realpath(site[0]), (rewrite.new_line(site[1]) if same_file else site[1]) or 0)
    if not v.add(
        "recompile gone", at not in now, "" if at not in now else "torch still recompiles there"
    ):
        return False
    moved = {(p, rewrite.new_line(ln) if p == os.path.realpath(edited) else ln) for p, ln in before}
    new = sorted(k for k in now if k not in moved)
    detail = ", ".join(f"{os.path.basename(p)}:{ln}" for p, ln in new[:3])
    return v.add("no new recompile site", not new, detail)


def _moved(
    keys: Counter[tuple[str, int, str]], rewrite: Rewrite, edited: Path
) -> Counter[tuple[str, int, str]]:
    """The original's break keys at their lines in the rewritten file."""
    out: Counter[tuple[str, int, str]] = Counter()
    for (p, line, gb), n in keys.items():
        new = rewrite.new_line(line) if p == os.path.realpath(edited) else line
        if new is not None:
            out[(p, new, gb)] += n
    return out


@dataclass(frozen=True)
class RecompileCheck:
    """The recompile check's settings, as the check that found a recompile ran it."""

    dynamic: bool | None
    limit: int
    probes: int


def _recompile_lines(
    t: Target, ws: Workspace, how: RecompileCheck, label: str, anchor: Frame | None
) -> Counter[tuple[str, int]]:
    found = recompiles.find_recompiles(
        t,
        ws,
        name=label,
        dynamic=how.dynamic,
        limit=how.limit,
        probes=how.probes,
        compiled_frames=[t.path],
        anchor=anchor,
    ).findings
    return Counter((os.path.realpath(f.path), f.line) for f in found if f.kind is Kind.RECOMPILE)


def verify(
    path: Path,
    pick: Callable[[types.ModuleType], Target],
    rewrite: Rewrite,
    site: tuple[str, int, str],
    ws: Workspace,
    *,
    backend: Any,
    grads_mode: str,
    label: str,
    recompile_check: RecompileCheck | None = None,
) -> Verdict:
    """The verdict on ``rewrite`` for the break at ``site`` (path, line, gb_type) that a target
    of ``path`` reported; ``pick`` finds that target in a module made from ``path``."""
    v = Verdict(rewrite, label)
    edited = Path(rewrite.path)
    source = edited.read_text(encoding="utf-8")
    purge_workspace_modules(ws)
    original = pick(import_file(path, ws))
    state = modelstate.save(original.fn)
    calls = list(original.calls)
    grads = trains(original.fn, grads_mode)
    rtol_atol = {"rtol": 0.0, "atol": 0.0} if rewrite.exact else {"rtol": None, "atol": None}

    eager0 = []
    for call in calls:
        modelstate.load(original.fn, state)
        torch.manual_seed(0)
        eager0.append(forward_and_grads(eager_of(original.fn), _clone(call), grads, original.fn))
    # The raw findings, as ``after`` below (not the check's reported ones: filtered, merged):
    # those the check just traced when this original is the one it traced, else traced now.
    # Anchored as the check's are: a break all inside a library shows at the target's call
    # site; in the rewrite, where that line moved (the shadow's text is not on disk to parse).
    anchor0 = anchor_of(original, ws)
    anchor1 = anchor0
    if anchor0 is not None and os.path.realpath(anchor0.path) == os.path.realpath(edited):
        moved_to = rewrite.new_line(anchor0.line)
        anchor1 = dataclasses.replace(anchor0, line=moved_to) if moved_to else None
    found0 = lastcheck.recall(str(path), original.name, calls[0], ws)
    if found0 is None:
        found0 = find_breaks(original.fn, _clone(calls[0]), ws, label, anchor0).findings
    before = _break_keys(found0)
    series = [calls[0], calls[0], _same_shape_fresh(calls[0]), *calls[1:]]
    rc_how = recompile_check or RecompileCheck(None, 8, 4)
    for_recompile = site[2] == RECOMPILE_SITE
    if for_recompile:
        modelstate.load(original.fn, state)
        recompiled0 = _recompile_lines(original, ws, rc_how, label, anchor0)

    with shadowed(edited, rewrite.apply(source), ws):
        fixed = pick(import_shadowed(path, edited, ws))
        modelstate.load(fixed.fn, state)
        after = find_breaks(fixed.fn, _clone(calls[0]), ws, label, anchor1).findings
        if for_recompile:
            modelstate.load(fixed.fn, state)
            if not _recompile_gone(
                v, site, rewrite, edited, recompiled0, fixed, ws, rc_how, anchor1
            ):
                return v
        else:
            gone = not any(_at_site(f, site, rewrite) for f in after)
            if not v.add("break gone", gone, "" if gone else "torch still breaks at the rewrite"):
                return v
        moved = _moved(before, rewrite, edited)
        extra = _break_keys(after) - moved
        detail = ", ".join(f"{os.path.basename(p)}:{ln} {gb}" for p, ln, gb in list(extra)[:3])
        if not v.add("no new break", not extra, detail):
            return v
        diffs = []
        for call, (out0, g0) in zip(calls, eager0, strict=True):
            modelstate.load(fixed.fn, state)
            torch.manual_seed(0)
            out1, g1 = forward_and_grads(eager_of(fixed.fn), _clone(call), grads, fixed.fn)
            diffs += compare(out1, out0, grad=False, label="output", **rtol_atol)
            if grads:
                diffs += compare(g1, g0, grad=True, label="grad", **rtol_atol)
        how = "bitwise" if rewrite.exact else "within the dtype's tolerance"
        first = f"{diffs[0].where}: {diffs[0].detail}" if diffs else how
        if not v.add("outputs equal", not diffs, first):
            return v
        modelstate.load(fixed.fn, state)
        fixed_series = _compiled_series(fixed, series, backend, grads, ws, label, anchor1)
        out_c, g_c = fixed_series.out, fixed_series.grads
        diffs = compare(out_c, eager0[0][0], rtol=None, atol=None, grad=False, label="output")
        if grads:
            diffs += compare(g_c, eager0[0][1], rtol=None, atol=None, grad=True, label="grad")
        first = f"{diffs[0].where}: {diffs[0].detail}" if diffs else ""
        if not v.add("compiled equal", not diffs, first):
            return v
    # Later calls: the site must not break again, and no other break may appear that the
    # original's same calls did not show (their series runs only when needed).
    again = [f for f in fixed_series.breaks if _at_site(f, site, rewrite)]
    later = set(_break_keys(fixed_series.breaks)) - set(moved)
    orig_series: _Series | None = None
    if later or fixed_series.recompiles:
        modelstate.load(original.fn, state)
        orig_series = _compiled_series(original, series, backend, grads, ws, label, anchor0)
        later -= set(_moved(_break_keys(orig_series.breaks), rewrite, edited))
    detail = (
        f"torch breaks at the rewrite again on a later call (line {again[0].line})"
        if again
        else ", ".join(f"{os.path.basename(p)}:{ln} {gb}" for p, ln, gb in sorted(later)[:3])
    )
    if not v.add("no break on later calls", not again and not later, detail):
        return v
    recompiles1 = fixed_series.recompiles
    recompiles0 = orig_series.recompiles if orig_series is not None else 0
    detail = f"{recompiles1} recompile(s) over {len(series)} calls, original {recompiles0}"
    if not v.add("no new recompile", recompiles1 <= recompiles0, detail):
        return v
    v.verified = True
    return v
