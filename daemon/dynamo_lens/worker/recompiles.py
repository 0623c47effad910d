"""Recompile risks: run the input variants under Dynamo and explain every recompile.

Each recompile's guard-failure reason comes from the structured trace's compilation metrics
(never scraped stderr). It is classified (size, dtype, Python value, None-ness, length, ...),
mapped to the user line the guard came from, and grouped: a group that recompiles again and
again is a warning; a single size change absorbed by automatic dynamic shapes is information.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..findings import Finding, FindingData, Frame
from ..texts import guards
from ..texts.guards import (
    HINT_RE,
    LOC_RE,
    Guard,
    classify,
    frames_in,
    split_reason,
)
from ..texts.locate import (
    Workspace,
    call_line,
    clean_function_name,
    expression_span,
    frame_at,
    is_plumbing,
    library_frame,
    parameter_span,
    source_line,
)
from . import torchcompat
from .breaks import where
from .freshvalues import next_call
from .markable import mark_dynamic_data, scalar_arg_data
from .probecalls import as_it_runs, probe_families, runs_with_grad, valid_in_eager
from .tracecapture import TraceCapture
from .usercode import Call, Target, code_of, keyword_only_names, parameter_names


@dataclass
class Recompile:
    guard: Guard
    path: str
    line: int
    code_name: str
    first_line: int  # the compiled frame's def line
    located: bool  # whether the reason named a user line
    stack: list[Frame] = field(default_factory=list)
    torch_hint: str = ""
    origin: Frame | None = None  # the guard's line when it is library code
    co_file: str = ""  # the compiled frame torch recompiled


def _resolve_tail(tail: str, line: int, candidates: list[str]) -> str | None:
    """The file a guard's "# code  # <path tail>:<line>" names: torch shortens the path, so
    match it as a suffix, first among the frames we know of, then among imported modules."""
    for c in candidates:
        if c.endswith(tail.lstrip(".")) or Path(c).name == Path(tail).name:
            text = source_line(c, line)
            if text:
                return c
    suffix = tail.lstrip(".")
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__dict__", {}).get("__file__")
        if isinstance(f, str) and f.endswith(suffix) and source_line(f, line):
            return f
    return None


def parse_recompile(
    reason: str,
    metrics: dict[str, Any],
    candidates: list[str],
    ws: Workspace,
    anchor: Frame | None = None,
) -> Recompile | None:
    """One recompile. A guard in library code sits on the deepest workspace frame of its
    stack, else on ``anchor`` (the example's call), and names the library line; None when
    there is nowhere in the workspace to show it."""
    first = reason.strip().splitlines()[0] if reason.strip() else reason
    # torch 2.8 appends "(HINT: ...)" to the guard's own line.
    first = re.sub(r"\s*\(HINT: .*$", "", first)
    guard_text = split_reason(first)[0].strip()
    co_file = str(metrics.get("co_filename") or "")
    co_line = int(metrics.get("co_firstlineno") or 1)
    co_name = clean_function_name(str(metrics.get("co_name") or ""))
    path, line, located = co_file, co_line, False
    origin: Frame | None = None
    # The user stack trace runs outermost first: the deepest workspace frame is the guard's.
    stack = [ws.frame(*fr) for fr in frames_in(reason) if not is_plumbing(fr[0])]
    user = ws.user_frames(stack)
    if stack and not ws.contains(stack[-1].path):
        origin = stack[-1]
    if user:
        path, line, located = user[-1].path, user[-1].line, True
    elif not stack:
        # Otherwise "# <code>  # <path tail>:<line> in <fn>"; the quoted code may hold "#" too.
        locs = list(LOC_RE.finditer(first))
        if locs:
            lm = locs[-1]
            found = _resolve_tail(lm["tail"], int(lm["line"]), [co_file, *candidates])
            if found and ws.contains(found):
                path, line, located = found, int(lm["line"]), True
            elif found:
                origin = library_frame(found, int(lm["line"]), lm["fn"])
                # Older torch gives no user stack: the compiled frame's call into the library
                # function is the user's line, when the frame has exactly one such call.
                at = call_line(co_file, co_line, lm["fn"]) if ws.contains(co_file) else None
                if at is not None:
                    path, line, located = co_file, at, True
                    stack = [frame_at(co_file, at, co_name), origin]
    if not located and not ws.contains(path):
        origin = origin or library_frame(co_file, co_line, co_name)
        if anchor is None:
            return None
        path, line, located = anchor.path, anchor.line, True
        stack = [anchor, *stack] if stack else [anchor, origin]
    hint = HINT_RE.search(reason[:8192])
    return Recompile(
        classify(guard_text),
        path,
        line,
        co_name,
        co_line,
        located,
        stack,
        hint.group(1).strip() if hint else "",
        origin,
        co_file,
    )


@dataclass
class Group:
    guard: Guard
    path: str
    line: int
    first_line: int
    located: bool
    count: int = 0
    seen: list[str] = field(default_factory=list)
    limit_hit: bool = False
    stack: list[Frame] = field(default_factory=list)
    torch_hint: str = ""
    origin: Frame | None = None
    frames: set[tuple[str, int]] = field(default_factory=set)  # compiled frames it recompiled
    trigger: int = 0  # which call of the example first recompiled it
    # "repeats": a fresh value compiled again; "once": it did not; "": not measured
    measured: str = ""
    fresh: str = ""  # the fresh call, as shown


def absorbed(group: Group) -> bool:
    """A one-off, as torch counts it: one recompile that does not repeat. Automatic dynamic
    shapes make a changed size (or a probed number) dynamic; any other change (a None mask,
    a second dtype) leaves two cached graphs that later calls reuse. Only what recompiles
    again and again (in the example, or in the one fresh call that measures it), or hits the
    limit, is a risk."""
    return group.count == 1 and not group.limit_hit and group.measured != "repeats"


def _finding(
    group: Group,
    target: str,
    limit: int,
    declared: bool,
    names: list[str],
    own: tuple[str, int] | None,
    t: Target,
) -> Finding:
    # names, own: the target's parameters and code; a callee's `x` is not the target's
    g = group.guard
    if group.located:
        span = expression_span(group.path, group.line, "len" if g.kind == "len" else None)
    else:
        param = g.var.split(".")[0].split("[")[0]
        span = parameter_span(group.path, group.first_line, param)
    # A guard in library code: say where, since the user's line holds only the call.
    origin = where(group.origin) if group.origin is not None else ""
    # A number torch made dynamic after one change: probed, or measured (a fresh value did not
    # compile again). A dtype, None-ness or a length stays two cached graphs.
    dynamic_number = g.kind in ("value", "attr") and (not declared or group.measured == "once")
    then = (
        "then automatic dynamic shapes made it dynamic"
        if g.kind == "size" or dynamic_number
        else "and both graphs stay cached for later calls"
    )
    data: FindingData = {
        "recompiles": group.count,
        "values": list(dict.fromkeys(group.seen)),
        "limit_hit": group.limit_hit,
        "source": "variants" if declared else "probes",
    }
    # Where the fix may edit the example's calls: the target's own argument (markable.py).
    mine = own in group.frames
    keywords = keyword_only_names(t.fn) if mine else frozenset()
    if g.kind == "size" and g.dim is not None and group.origin is None:
        data["mark_dynamic"] = mark_dynamic_data(g.var, g.dim, names if mine else [], t, keywords)
    if g.kind == "value" and group.origin is None and mine:
        scalar = scalar_arg_data(g.var, names, t, keywords)
        if scalar is not None:
            data["scalar_arg"] = scalar
    bucket = guards.buckets(g, group.seen) if g.kind == "size" else ""
    return guards.finding(
        Frame(group.path, span.line),
        g,
        group.count,
        origin=origin,
        stack=group.stack,
        explanation=(
            "Dynamo guards on what it specialised while tracing; a call that fails a guard "
            "compiles again. Input variants "
            + ("declared in the example" if declared else "probed by perturbing dims and scalars")
            + f" triggered this. torch's failed guard: `{g.text}`."
            + _measured_text(group)
        ),
        hints=[h for h in (bucket, group.torch_hint) if h],
        data=data,
        target=target,
        span=(span.line, span.column, span.end_line, span.end_column),
        then=then,
        measured=group.measured,
        fresh=group.fresh,
        seen=group.seen,
        by_value=g.kind in ("value", "attr"),
        limit=limit,
        limit_hit=group.limit_hit,
    )


def _measured_text(group: Group) -> str:
    if group.measured == "repeats":
        return (
            f" The example recompiled once; one more call with the changed input changed "
            f"again, {group.fresh}, recompiled again: each new value costs a compile."
        )
    if group.measured == "once":
        return (
            f" One more call with the changed input changed again, {group.fresh}, did not "
            "recompile: the change is absorbed."
        )
    return ""


@contextlib.contextmanager
def _recompile_limit(limit: int) -> Iterator[None]:
    cfg = torch._dynamo.config
    name = torchcompat.recompile_limit_name()
    old = getattr(cfg, name)
    setattr(cfg, name, limit)
    try:
        yield
    finally:
        setattr(cfg, name, old)


_ARGS_RE = re.compile(r"^(?P<pack>args|kwargs)\[(?P<key>\d+|'[^']+')\](?P<rest>.*)$")


def user_name(var: str, names: list[str]) -> str:
    """``args[1]`` (a wrapper's ``*args``, as in transformers' decorators) -> the user's own
    parameter name, when the target's real signature names it."""
    m = _ARGS_RE.match(var)
    if not m or "args" in names or "kwargs" in names:
        return var
    key = m["key"]
    if m["pack"] == "kwargs":
        return key.strip("'") + m["rest"]
    i = int(key)
    return names[i] + m["rest"] if i < len(names) else var


@dataclass
class RecompileResult:
    findings: list[Finding]
    compiles: int
    recompiles: int
    variants: list[str]
    cap_breaks: list[TraceCapture] = field(default_factory=list)
    errors: list[tuple[BaseException, Call]] = field(default_factory=list)
    grad: bool = True  # whether its calls ran with gradients (``runs_with_grad``)

    @property
    def unbroken(self) -> bool:
        """Torch logged no break over the calls, compiled no resume function and gave up on
        no frame: every call ran as whole graphs, so no tensor's value chose a path."""
        for cap in self.cap_breaks:
            if cap.of("artifact", "dynamo_graph_break_reason"):
                return False
            for ev in cap.of("compilation_metrics"):
                m = ev.metadata
                resumed = str(m.get("co_name") or "").startswith("torch_dynamo_resume")
                # No graph and no failure: torch 2.8's silent skip of a frame that broke in
                # a loop.
                if m.get("fail_type") or resumed or m.get("graph_op_count") is None:
                    return False
        return bool(self.cap_breaks)


def describe_call(call: Call) -> str:
    def one(v: Any) -> str:
        if isinstance(v, torch.Tensor):
            return f"{str(v.dtype).replace('torch.', '')}{list(v.shape)}"
        if isinstance(v, (list, tuple)):
            return f"{type(v).__name__}[{len(v)}]"
        if v is None or isinstance(v, (int, float, bool, str)):
            return repr(v)
        return type(v).__name__

    parts = [one(a) for a in call.args] + [f"{k}={one(v)}" for k, v in call.kwargs.items()]
    return "(" + ", ".join(parts) + ")"


class _CountingBackend:
    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        self.graphs += 1
        return gm.forward


def find_recompiles(
    target: Target,
    ws: Workspace,
    *,
    name: str,
    dynamic: bool | None,
    limit: int,
    probes: int,
    compiled_frames: list[str],
    anchor: Frame | None = None,
    measure: bool = True,
) -> RecompileResult:
    """``measure``: a recompile seen once gets one more call that tells whether it repeats
    (the finding's severity); verification, which counts compiles only, skips it."""
    declared = len(target.calls) >= 2
    grad = runs_with_grad(target.fn, target.calls[0])
    names = parameter_names(target.fn)
    own = code_of(target.fn)
    if declared:
        families = [target.calls]
    else:
        families = [
            [c for c in fam if c is fam[0] or valid_in_eager(target.fn, c, grad)]
            for fam in probe_families(target.calls[0], probes)
        ]
        families = [f for f in families if len(f) >= 2]
    # Keyed by family too: each probe family perturbs one dim from a fresh Dynamo, so counts
    # from different families never add up to a "repeated" recompile.
    groups: dict[tuple[Any, ...], Group] = {}
    compiles = recompiles = 0
    variants: list[str] = []
    caps: list[TraceCapture] = []
    errors: list[tuple[BaseException, Call]] = []
    candidates = list(dict.fromkeys([target.path, *compiled_frames]))
    for fi, fam in enumerate(families):
        torch._dynamo.reset()
        backend = _CountingBackend()
        compiled = torch.compile(target.fn, backend=backend, dynamic=dynamic)
        cap = TraceCapture()
        after_call: list[int] = []  # metrics records seen after each call
        quick = torchcompat.without_guard_latency_profile()
        with cap, _recompile_limit(limit), torchcompat.guard_user_lines(), quick:
            for call in fam:
                variants.append(describe_call(call))
                try:
                    with as_it_runs(grad):
                        compiled(*call.args, **call.kwargs)
                except Exception as exc:
                    if declared:
                        errors.append((exc, call))
                    break
                finally:
                    after_call.append(len(cap.of("compilation_metrics")))
        caps.append(cap)
        parse = _Parse(ws, anchor, candidates, names, None if declared else fi)
        for ev in cap.events:
            for fr in cap.frames(ev.metadata.get("user_stack")):
                if fr.path and fr.path not in candidates:
                    candidates.append(fr.path)
        metrics = [e.metadata for e in cap.of("compilation_metrics")]
        n, r, touched = _read(metrics, after_call, parse, groups)
        compiles, recompiles = compiles + n, recompiles + r
        if declared and measure:
            for group in {id(g): g for g in touched}.values():
                if group.count == 1 and not group.limit_hit:
                    _measure(group, compiled, fam, grad, limit, parse)
    findings = []
    for group in _merge_families(groups, declared):
        # Probes stand in for real shapes: report what recompiles repeatedly, never the
        # one-off per dim that automatic dynamic shapes absorb.
        if not declared and absorbed(group):
            continue
        findings.append(
            _finding(
                group,
                name,
                limit,
                declared,
                names,
                own,
                target,
            )
        )
    return RecompileResult(findings, compiles, recompiles, variants, caps, errors, grad)


def _read(
    metrics: list[dict[str, Any]],
    after_call: list[int],
    parse: _Parse,
    groups: dict[tuple[Any, ...], Group],
) -> tuple[int, int, list[Group]]:
    """One run of calls, from torch's compilation metrics (``after_call``: how many records
    there were after each call): the frames compiled, the recompiles, and the groups those
    recompiles counted in (``groups``, added to), the one that recompiled a frame torch gave
    up on at its limit marked."""
    compiles = recompiles = 0
    limit_frames: set[tuple[str, int]] = set()
    touched: list[Group] = []
    for i, m in enumerate(metrics):
        if torchcompat.hit_recompile_limit(m):
            limit_frames.add((str(m.get("co_filename")), int(m.get("co_firstlineno") or 0)))
        if m.get("fail_type") is None:
            compiles += 1
        found = parse.one(m)
        if found is None:
            continue
        key, rc = found
        recompiles += 1
        group = groups.get(key)
        if group is None:
            group = groups[key] = Group(
                rc.guard,
                rc.path,
                rc.line,
                rc.first_line,
                rc.located,
                stack=rc.stack,
                torch_hint=rc.torch_hint,
                origin=rc.origin,
                trigger=next((k for k, n in enumerate(after_call) if n > i), len(after_call)),
            )
        _count(group, rc)
        touched.append(group)
    for frame in limit_frames:
        # The limit belongs to the frame torch names: the group that recompiled that frame.
        hit = [g for g in touched if frame in g.frames] or touched
        if hit:
            max(hit, key=lambda g: g.count).limit_hit = True
    return compiles, recompiles, touched


def from_metrics(
    target: Target,
    ws: Workspace,
    metrics: list[dict[str, Any]],
    after_call: list[int],
    *,
    name: str,
    limit: int,
    anchor: Frame | None = None,
) -> tuple[list[Finding], int, int]:
    """The recompile check's findings, frames compiled and recompiles, read from calls of the
    declared variants made elsewhere (verification's compiled series, which runs them as the
    check does: ``dynamic`` unset, the guards' user lines logged), unmeasured."""
    names = parameter_names(target.fn)
    groups: dict[tuple[Any, ...], Group] = {}
    parse = _Parse(ws, anchor, [target.path], names, None)
    compiles, recompiles, _ = _read([_own(m) for m in metrics], after_call, parse, groups)
    own = code_of(target.fn)
    findings = [_finding(g, name, limit, True, names, own, target) for g in groups.values()]
    return findings, compiles, recompiles


# A cache entry another version's compile left on a code object both share (a library's
# function): torch recompiles for the other backend object, a compile a fresh process would not
# call a recompile. 2.13 says BACKEND_MATCH; 2.8 says nothing after the compile id.
_OTHER_BACKEND = re.compile(r"BACKEND_MATCH|check_current_backend|^\s*\d+/\d+:\s*$", re.M)


def _own(m: dict[str, Any]) -> dict[str, Any]:
    """A compilation's record without the guard failures of another backend's entries."""
    reason = str(m.get("recompile_reason") or "")
    if not _OTHER_BACKEND.search(reason):
        return m
    kept = "\n".join(ln for ln in reason.splitlines() if not _OTHER_BACKEND.search(ln))
    return {**m, "recompile_reason": kept if kept.strip() else None}


def _count(group: Group, rc: Recompile) -> None:
    g = rc.guard
    group.count += 1
    group.frames.add((rc.co_file, rc.first_line))
    if g.seen is not None and g.kind in ("size", "dtype", "len", "none", "value", "attr"):
        # For values the guard names the old one; the next call passed the new one.
        group.seen.append(g.seen)


@dataclass
class _Parse:
    """A compilation's recompile, if it is one, keyed by what groups it: the guard, its line
    and library origin (and, for probes, the probe family)."""

    ws: Workspace
    anchor: Frame | None
    candidates: list[str]
    names: list[str]
    family: int | None

    def one(self, m: dict[str, Any]) -> tuple[tuple[Any, ...], Recompile] | None:
        reason = m.get("recompile_reason")
        if not reason or m.get("fail_type") is not None:
            return None
        rc = parse_recompile(str(reason), m, self.candidates, self.ws, self.anchor)
        if rc is None:
            return None
        g = rc.guard
        g.var = user_name(g.var, self.names)
        origin = where(rc.origin) if rc.origin else ""
        return (self.family, g.kind, g.var, g.dim, rc.path, rc.line, origin), rc


# Guards on what the example's calls pass, whose next value can be made.
_MEASURABLE = ("size", "size-range", "len", "none", "value")


def _measure(
    group: Group, compiled: Any, calls: list[Call], grad: bool, limit: int, parse: _Parse
) -> None:
    """Seen once: one more call, with the input that changed changed once more, tells whether
    torch recompiles for every new value (then it is a risk) or absorbed the change."""
    if group.guard.kind not in _MEASURABLE or not 1 <= group.trigger < len(calls):
        return
    fresh = next_call(calls[group.trigger - 1], calls[group.trigger])
    cap = TraceCapture()
    try:
        with cap, _recompile_limit(limit), torchcompat.guard_user_lines(), as_it_runs(grad):
            compiled(*fresh.args, **fresh.kwargs)
    except Exception:
        return  # a value the code does not accept: not measured
    group.fresh = describe_call(fresh)
    group.measured = "once"
    for m in (e.metadata for e in cap.of("compilation_metrics")):
        found = parse.one(m)
        if found is None:
            continue
        _, rc = found
        same = (rc.guard.kind, rc.guard.var, rc.path, rc.line) == (
            group.guard.kind,
            group.guard.var,
            group.path,
            group.line,
        )
        if same:
            # The probe call is ours: it decides severity, never the count, which stays
            # what torch compiled for the user's own calls.
            group.measured = "repeats"


def _merge_families(groups: dict[tuple[Any, ...], Group], declared: bool) -> list[Group]:
    """Probe families reaching the same guard on the same line: one finding, the worst family."""
    if declared:
        return list(groups.values())
    best: dict[tuple[Any, ...], Group] = {}
    for key, g in groups.items():
        k = key[1:]
        if k not in best or (g.limit_hit, g.count) > (best[k].limit_hit, best[k].count):
            best[k] = g
    return list(best.values())
