"""Graph breaks: every site where TorchDynamo stops capturing, on the user's line.

Sources, merged per site: ``explain``'s break reasons (reason text and user stack) and the
structured trace's graph-break artifacts (the ``Unsupported`` exception with ``gb_type`` and
``real_stack``, also for breaks after which nothing compiles, which ``graph_break_count`` misses).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import Any

import torch

from ..findings import Finding, FindingData, Frame
from ..texts import breaktext
from ..texts.breaktext import Parsed
from ..texts.errors import frames_from_traceback
from ..texts.locate import Workspace, clean_function_name, frame_at, is_plumbing
from . import compiletime, torchcompat
from .tracecapture import GraphBreakLog, TraceCapture
from .usercode import Call, Target

_message = breaktext.message
where = breaktext.where


def parse_reason(text: str, gb_type: str | None = None) -> Parsed:
    """torch's break text, with this torch's registry over the shipped table."""
    return breaktext.parse_reason(text, gb_type, torchcompat.registry())


@dataclass
class Site:
    frames: list[Frame]  # the call chain, outermost first: workspace and library frames
    at: Frame  # where the finding sits: the deepest workspace frame, else the example's call
    origin: Frame | None  # the deepest frame when it is library code: where torch broke
    parsed: Parsed
    raw: str = ""
    sources: set[str] = field(default_factory=set)
    anchored: bool = False  # no workspace frame of its own: shown at the example's call
    count: int = 1  # how often torch reported this break


def _frames_from_text(text: str, ws: Workspace) -> list[Frame]:
    out: list[Frame] = []
    for ln in text.splitlines():
        tb = breaktext.traceback_frame(ln)
        if tb and not is_plumbing(tb[0]):
            out.append(ws.frame(*tb))
    return out


def _clean(frames: list[Frame]) -> list[Frame]:
    out: list[Frame] = []
    for f in frames:
        if is_plumbing(f.path):
            continue
        name = clean_function_name(f.name)
        if name != f.name:
            f = Frame(f.path, f.line, name, f.column, f.end_line, f.end_column, f.code)
        # Resume functions repeat their caller's frame; keep each (path, line) once.
        if out and (out[-1].path, out[-1].line) == (f.path, f.line):
            continue
        out.append(f)
    return out


def _cut_at_site(frames: list[Frame], text: str, ws: Workspace) -> list[Frame]:
    """End the chain where torch says the break is: a real_stack can run on into torch's
    internals (fake-tensor implementations) that torch itself does not call user code."""
    named = breaktext.site(text.lstrip().split("\n", 1)[0]) if text else None
    if named is None:
        return frames
    site = (os.path.realpath(named[0]), named[1])
    for i in range(len(frames) - 1, -1, -1):
        if (os.path.realpath(frames[i].path), frames[i].line) == site:
            return frames[: i + 1]
    # The stack lacks torch's site: keep what leads there, then the site itself.
    lead = [f for f in frames if f"{os.sep}torch{os.sep}_" not in f.path]
    return [*lead, ws.frame(*named)]


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""


def collect_sites(
    out: Any, cap: TraceCapture, ws: Workspace, anchor: Frame | None = None
) -> list[Site]:
    """Every break torch logged. ``anchor`` (the example's call of the target) holds breaks
    whose stack has no workspace frame: a break inside a library is still the user's break."""
    sites: dict[tuple[str, int, str, str], Site] = {}

    def add(frames: list[Frame], parsed: Parsed, raw: str, source: str) -> None:
        chain = _clean(frames)
        user = ws.user_frames(chain)
        at = user[-1] if user else anchor
        if at is None:
            return
        origin = chain[-1] if chain and not ws.contains(chain[-1].path) else None
        if not user:
            chain = [at, *chain]
        key = (at.path, at.line, where(origin) if origin else "", parsed.gb_id or parsed.gb_type)
        # The same site reached twice (e.g. by explain and by the trace): keep the richer copy.
        existing = sites.get(key)
        if existing is None:
            sites[key] = Site(chain, at, origin, parsed, raw, {source}, anchored=not user)
            return
        existing.sources.add(source)
        if not existing.parsed.explanation and parsed.explanation:
            existing.parsed = parsed
        if len(chain) > len(existing.frames):
            existing.frames = chain

    for ev in cap.of("artifact", "dynamo_graph_break_reason"):
        exc = ev.exc
        text = str(ev.payload or "")
        gb_type = getattr(exc, "gb_type", None) or None
        msg = getattr(exc, "msg", None) or text
        real_stack = getattr(exc, "real_stack", None)
        frames = frames_from_traceback(real_stack, ws) if real_stack else []
        if not ws.user_frames(frames):
            # real_stack can hold the inlined frames alone; the logged traceback has the rest.
            frames = _frames_from_text(text, ws) or frames
        if not frames:
            continue  # no stack at all: nowhere to show it (a record logged twice)
        parsed = parse_reason(msg, gb_type)
        if breaktext.says_skipped(text):
            # exc.msg is the break alone; torch's log says it then gave up on the function.
            parsed.fallback = "skipped"
        add(_cut_at_site(frames, text, ws), parsed, msg, "trace")
    logged = bool(sites)

    for reason in getattr(out, "break_reasons", []) or []:
        frames = frames_from_traceback(list(reason.user_stack), ws)
        parsed = parse_reason(reason.reason)
        # explain's reason text lacks gb_type for some breaks ("step_unsupported": a break in
        # an inlined call, seen again at the call). torch logged that break already when a
        # logged site's chain passes through this line: the same break, not another one.
        if parsed.gb_id is None and logged and not parsed.explanation:
            # An unstructured reason ("step_unsupported") beside torch's own log of the same
            # run: the log names every break; this is one of them seen from a caller.
            continue
        if parsed.gb_id is None:
            chain = _clean(frames)
            if chain:
                last = (chain[-1].path, chain[-1].line)
                same = [s for s in sites.values() if last in {(f.path, f.line) for f in s.frames}]
                if same:
                    for site in same:
                        site.sources.add("explain")
                    continue
        add(frames, parsed, reason.reason, "explain")
    return _merge_same_line(_drop_repeats(list(sites.values())))


def _drop_repeats(sites: list[Site]) -> list[Site]:
    """A library function that broke while inlined is then run, and compiled, on its own: the
    same break again with a stack of the library frame alone. torch logs it as a duplicate
    ("user stack suppressed"); so do we, keeping the copy that shows the user's call."""

    def ident(s: Site) -> tuple[str, str]:
        return (where(s.origin) if s.origin else "", s.parsed.gb_id or s.parsed.gb_type)

    placed = {ident(s) for s in sites if not s.anchored}
    return [s for s in sites if not s.anchored or ident(s) not in placed]


def _one_per_break(sites: list[Site]) -> list[Site]:
    """One break, one site: torch reports a break at the user's line while inlining a library
    call, then again (from inside the library) when it compiles that library function on its
    own. The same line, id and library line are one break, and a copy that names no library
    line joins the one that does; the reports are counted. Breaks at different library lines
    stay apart (a generate() loop that branches in four places is four breaks)."""
    groups: dict[tuple[str, int, str], list[Site]] = {}
    for site in sites:
        if site.parsed.gb_id == "GB7000":
            continue  # folded into its cause by _merge_same_line
        key = (site.at.path, site.at.line, site.parsed.gb_id or site.parsed.gb_type)
        groups.setdefault(key, []).append(site)
    dropped: set[int] = set()
    for group in groups.values():
        heads: dict[str, Site] = {}
        for site in sorted(group, key=lambda s: (s.origin is None, -len(s.frames))):
            okey = where(site.origin) if site.origin else ""
            into = heads.get(okey) or (next(iter(heads.values())) if not okey and heads else None)
            if into is None:
                heads[okey] = site
                continue
            into.count += site.count
            into.sources |= site.sources
            dropped.add(id(site))
    return [s for s in sites if id(s) not in dropped]


def _merge_same_line(sites: list[Site]) -> list[Site]:
    """One squiggle per line and library origin. A break in a loop also makes Dynamo skip the
    frame (GB7000): that consequence is folded into its cause, which is the headline and says
    that the function then runs eagerly."""
    by_line: dict[tuple[str, int], list[Site]] = {}
    for s in _one_per_break(sites):
        by_line.setdefault((s.at.path, s.at.line), []).append(s)
    merged: list[Site] = []
    for group in by_line.values():
        group.sort(key=lambda s: (s.parsed.gb_id == "GB7000", "explain" not in s.sources))
        heads: dict[str, Site] = {}
        for site in group:
            okey = where(site.origin) if site.origin else ""
            if site.parsed.gb_id == "GB7000" and heads:
                main = heads.get(okey) or next(iter(heads.values()))
                main.parsed.fallback = main.parsed.fallback or "loop"
                continue
            if okey in heads:
                main = heads[okey]
            else:
                # A copy: the merge below appends to it, and parsed records may be shared.
                p = site.parsed
                site.parsed = Parsed(p.gb_type, p.explanation, list(p.hints), p.gb_id, p.fallback)
                heads[okey] = site
                continue
            code = f" [{site.parsed.gb_id}]" if site.parsed.gb_id else ""
            main.parsed.explanation += f" Also here: {site.parsed.gb_type}{code}."
            if site.parsed.explanation:
                main.parsed.explanation += f" {site.parsed.explanation}"
            main.parsed.hints += [h for h in site.parsed.hints if h not in main.parsed.hints]
            main.parsed.fallback = main.parsed.fallback or site.parsed.fallback
        merged.extend(heads.values())
    return merged


def to_finding(site: Site, target: str) -> Finding:
    p = site.parsed
    data: FindingData = {}
    explanation = p.explanation or _first_line(site.raw)
    if site.count > 1:
        # Inlining the library call broke, and compiling the library function on its own did.
        data["count"] = site.count
        explanation += f" torch reported this break {site.count} times."
    return breaktext.finding(
        site.at, p, site.origin, site.frames, explanation=explanation, data=data, target=target
    )


def _loop_lines(path: str) -> set[int]:
    """The lines of ``path`` inside a ``for`` or ``while`` body ({} when it cannot be read)."""
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return set()
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            for stmt in node.body:
                out.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return out


def with_silent_loop_skips(sites: list[Site], metrics: list[dict[str, Any]], ws: Workspace) -> None:
    """A break in a loop makes torch skip the whole frame. torch 2.9+ logs it (GB7000); torch
    2.8 only leaves its trace in the compilation metrics: the frame's compile made no graph and
    failed nothing, and no resume function of it was compiled. A break there, inside a loop,
    is that fallback."""
    names = [str(m.get("co_name") or "") for m in metrics]
    for m in metrics:
        name, path = str(m.get("co_name") or ""), str(m.get("co_filename") or "")
        if m.get("fail_type") or m.get("graph_op_count") is not None or not ws.contains(path):
            continue
        if any(n.startswith(f"torch_dynamo_resume_in_{name}_at_") for n in names):
            continue
        here = [s for s in sites if s.at.path == path and s.at.name == name]
        loops = _loop_lines(path) if here else set()
        for s in here:
            if s.parsed.fallback is None and s.at.line in loops:
                s.parsed.fallback = "loop"


def with_skipped_frames(
    sites: list[Site], metrics: list[dict[str, Any]], ws: Workspace
) -> list[Site]:
    """Frames torch gave up on (``fail_type`` Unsupported in its compilation metrics: a break
    in a try block or an active context manager): the break there says so, and where torch
    logged no break for it (torch 2.8), the skip is a finding of its own."""
    for m in metrics:
        path = str(m.get("fail_user_frame_filename") or "")
        if m.get("fail_type") != "Unsupported" or not ws.contains(path):
            continue
        line = int(str(m.get("fail_user_frame_lineno") or 0)) or 1
        here = [s for s in sites if (s.at.path, s.at.line) == (path, line)]
        for s in here:
            s.parsed.fallback = s.parsed.fallback or "skipped"  # "loop" says more
        if not here:
            parsed = parse_reason(str(m.get("fail_reason") or "unknown reason"))
            parsed.fallback = "skipped"
            at = frame_at(path, line, str(m.get("co_name") or ""))
            sites.append(Site([at], at, None, parsed, str(m.get("fail_reason")), {"metrics"}))
    return sites


@dataclass
class BreakResult:
    findings: list[Finding]
    graph_count: int
    ops: int
    compile_time: dict[str, Any]  # Dynamo's time by source function (compiletime.py)


def anchor_of(target: Target, ws: Workspace) -> Frame | None:
    """Where a target is called from in the workspace (a module's ``compile_example``): a break
    whose whole stack is in a library (a transformers model's forward) is shown there."""
    path, line, name = target.call_site
    return frame_at(path, line, name) if path and ws.contains(path) else None


def find_breaks(
    fn: Any, call: Call, ws: Workspace, target: str, anchor: Frame | None = None
) -> BreakResult:
    torch._dynamo.reset()
    torchcompat.clear_compilation_metrics()
    with GraphBreakLog() as cap, torchcompat.without_guard_latency_profile():
        out = torch._dynamo.explain(fn)(*call.args, **call.kwargs)
    metrics = torchcompat.compilation_metrics()
    findings = break_findings(out, cap, metrics, ws, anchor, target)
    cost = compiletime.by_function(metrics, ws)
    return BreakResult(findings, int(out.graph_count), int(out.op_count), cost)


def break_findings(
    out: Any,
    cap: TraceCapture,
    metrics: list[dict[str, Any]],
    ws: Workspace,
    anchor: Frame | None,
    target: str,
) -> list[Finding]:
    """The breaks of the compiles ``cap`` logged (and ``out``, explain's output, where there
    is one), with the frames torch gave up on or skipped whole by its ``metrics``."""
    sites = with_skipped_frames(collect_sites(out, cap, ws, anchor), metrics, ws)
    with_silent_loop_skips(sites, metrics, ws)
    findings = [to_finding(s, target) for s in sites]
    findings.sort(key=lambda f: (f.path, f.line, f.column))
    return findings
