"""Graph breaks: every site where TorchDynamo stops capturing, on the user's line.

Sources, merged per site: ``explain``'s break reasons (reason text and user stack) and the
structured trace's graph-break artifacts (the ``Unsupported`` exception with ``gb_type`` and
``real_stack``, also for breaks after which nothing compiles, which ``graph_break_count`` misses).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..engine.errors import frames_from_traceback
from ..engine.locate import Workspace, clean_function_name, frame_at
from ..findings import Finding, Frame, Kind, Severity, gb_doc_url
from .tracecapture import GraphBreakLog, TraceCapture
from .usercode import Call

_URL_RE = re.compile(r"https://\S+/gb/gb(\d+)\.html")
_TB_FRAME_RE = re.compile(r'^\s*File "(?P<path>.+)", line (?P<line>\d+), in (?P<name>\S+)')


@functools.lru_cache(maxsize=1)
def registry() -> dict[str, str]:
    """gb_type -> GBxxxx from torch's own registry (absent in older torch)."""
    path = Path(torch._dynamo.__file__).parent / "graph_break_registry.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    out: dict[str, str] = {}
    for gb_id, entries in data.items():
        for entry in entries if isinstance(entries, list) else [entries]:
            if isinstance(entry, dict) and entry.get("Gb_type"):
                out.setdefault(entry["Gb_type"], gb_id)
    return out


@dataclass
class Parsed:
    gb_type: str
    explanation: str
    hints: list[str]
    gb_id: str | None


def parse_reason(text: str, gb_type: str | None = None) -> Parsed:
    """Split torch's formatted graph-break message into type, explanation and hints."""
    lines = text.splitlines()
    expl_idx = next((i for i, ln in enumerate(lines) if ln.startswith("  Explanation:")), None)
    if gb_type is None:
        if expl_idx is not None:
            before = [ln for ln in lines[:expl_idx] if ln.strip()]
            gb_type = before[-1].strip() if before else ""
        else:
            gb_type = next((ln.strip() for ln in lines if ln.strip()), "unknown reason")
    explanation = ""
    hints: list[str] = []
    if expl_idx is not None:
        current: list[str] | None = None
        expl: list[str] = []
        for ln in lines[expl_idx:]:
            if ln.startswith("  Explanation:"):
                current = expl
                current.append(ln.split(":", 1)[1].strip())
            elif ln.startswith("  Hint:"):
                hints.append(ln.split(":", 1)[1].strip())
                current = None
            elif ln.startswith("  Developer debug context:") or ln.startswith(" For more details"):
                break
            elif ln.startswith("    ") and ln.strip():
                if current is not None:
                    current.append(ln.strip())
                elif hints:
                    hints[-1] += " " + ln.strip()
            elif not ln.strip():
                current = None
        explanation = " ".join(expl)
    gb_id = registry().get(gb_type)
    if gb_id is None:
        m = _URL_RE.search(text)
        if m:
            gb_id = f"GB{m.group(1)}"
    return Parsed(gb_type, explanation, hints, gb_id)


@dataclass
class Site:
    frames: list[Frame]  # workspace frames, outermost first
    parsed: Parsed
    raw: str = ""
    sources: set[str] = field(default_factory=set)


def _frames_from_text(text: str, ws: Workspace) -> list[Frame]:
    out: list[Frame] = []
    for ln in text.splitlines():
        m = _TB_FRAME_RE.match(ln)
        # Only user frames matter; locating torch's own would parse torch's sources.
        if m and ws.contains(m["path"]):
            out.append(frame_at(m["path"], int(m["line"]), m["name"]))
    return out


def _clean(frames: list[Frame]) -> list[Frame]:
    out: list[Frame] = []
    for f in frames:
        name = clean_function_name(f.name)
        if name != f.name:
            f = Frame(f.path, f.line, name, f.column, f.end_line, f.end_column, f.code)
        # Resume functions repeat their caller's frame; keep each (path, line) once.
        if out and (out[-1].path, out[-1].line) == (f.path, f.line):
            continue
        out.append(f)
    return out


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""


def _message(gb_type: str) -> str:
    text = gb_type.rstrip(".")
    return f"Graph break: {text[0].lower() + text[1:] if text[:2] != text[:2].upper() else text}"


def collect_sites(out: Any, cap: TraceCapture, ws: Workspace) -> list[Site]:
    sites: dict[tuple[str, int, str], Site] = {}

    def add(frames: list[Frame], parsed: Parsed, raw: str, source: str) -> None:
        user = _clean(ws.user_frames(frames))
        if not user:
            return
        deepest = user[-1]
        key = (deepest.path, deepest.line, parsed.gb_id or parsed.gb_type)
        # The same site reached twice (e.g. by explain and by the trace): keep the richer copy.
        existing = sites.get(key)
        if existing is None:
            sites[key] = Site(user, parsed, raw, {source})
            return
        existing.sources.add(source)
        if not existing.parsed.explanation and parsed.explanation:
            existing.parsed = parsed
        if len(user) > len(existing.frames):
            existing.frames = user

    for ev in cap.of("artifact", "dynamo_graph_break_reason"):
        exc = ev.exc
        text = str(ev.payload or "")
        gb_type = getattr(exc, "gb_type", None) or None
        msg = getattr(exc, "msg", None) or text
        real_stack = getattr(exc, "real_stack", None)
        frames = frames_from_traceback(real_stack) if real_stack else []
        if not ws.user_frames(frames):
            frames = _frames_from_text(text, ws)
        add(frames, parse_reason(msg, gb_type), msg, "trace")

    for reason in getattr(out, "break_reasons", []) or []:
        frames = frames_from_traceback(list(reason.user_stack))
        parsed = parse_reason(reason.reason)
        # explain's reason text lacks gb_type for some breaks; match a trace site on the line.
        if parsed.gb_id is None:
            user = _clean(ws.user_frames(frames))
            if user:
                for (p, ln, _), site in sites.items():
                    if (p, ln) == (user[-1].path, user[-1].line):
                        parsed = site.parsed
                        break
        add(frames, parsed, reason.reason, "explain")
    return _merge_same_line(list(sites.values()))


def _merge_same_line(sites: list[Site]) -> list[Site]:
    """One squiggle per line: a break in a loop also makes Dynamo skip the frame (GB7000);
    that consequence is folded into the cause's explanation."""
    by_line: dict[tuple[str, int], list[Site]] = {}
    for s in sites:
        by_line.setdefault((s.frames[-1].path, s.frames[-1].line), []).append(s)
    merged = []
    for group in by_line.values():
        group.sort(key=lambda s: ("explain" not in s.sources, s.parsed.gb_id == "GB7000"))
        main = group[0]
        if len(group) > 1:
            p = main.parsed
            main.parsed = Parsed(p.gb_type, p.explanation, list(p.hints), p.gb_id)
        for other in group[1:]:
            code = f" [{other.parsed.gb_id}]" if other.parsed.gb_id else ""
            main.parsed.explanation += f" Also here: {other.parsed.gb_type}{code}."
            if other.parsed.explanation:
                main.parsed.explanation += f" {other.parsed.explanation}"
            main.parsed.hints += [h for h in other.parsed.hints if h not in main.parsed.hints]
        merged.append(main)
    return merged


def to_finding(site: Site, target: str) -> Finding:
    deepest = site.frames[-1]
    p = site.parsed
    hints = list(p.hints)
    chain = " → ".join(f"{f.name or '?'}:{f.line}" for f in site.frames)
    return Finding(
        kind=Kind.GRAPH_BREAK,
        severity=Severity.WARNING,
        path=deepest.path,
        line=deepest.line,
        column=deepest.column or 1,
        end_line=deepest.end_line or deepest.line,
        end_column=deepest.end_column or (deepest.column or 1) + 1,
        message=_message(p.gb_type),
        explanation=p.explanation or _first_line(site.raw),
        hints=hints,
        gb_id=p.gb_id,
        doc_url=gb_doc_url(p.gb_id),
        stack=site.frames,
        target=target,
        data={"gb_type": p.gb_type, "call_chain": chain},
    )


@dataclass
class BreakResult:
    findings: list[Finding]
    graph_count: int
    ops: int


def find_breaks(fn: Any, call: Call, ws: Workspace, target: str) -> BreakResult:
    torch._dynamo.reset()
    with GraphBreakLog() as cap:
        out = torch._dynamo.explain(fn)(*call.args, **call.kwargs)
    sites = collect_sites(out, cap, ws)
    findings = [to_finding(s, target) for s in sites]
    findings.sort(key=lambda f: (f.path, f.line, f.column))
    return BreakResult(findings, int(out.graph_count), int(out.op_count))
