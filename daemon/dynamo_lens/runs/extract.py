"""Findings from a run's structured trace: the same ``Finding`` the engine makes, with the
same wording (``texts.breaktext``, ``texts.guards``), attributed to ranks.

Graph breaks: each ``dynamo_graph_break_reason`` artifact, at the deepest workspace frame of
its traceback (else the outermost frame that is the user's, e.g. the training script's call),
naming the library line when torch broke inside a library. Recompiles: each compilation's
``recompile_reason``, classified and grouped by guard and line; hitting the recompile limit.
A break or recompile seen on several ranks, or many times, is one finding with counts.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..engine.source import file_hash
from ..findings import (
    FileResult,
    Finding,
    FindingData,
    Frame,
    Kind,
    Severity,
    TargetReport,
)
from ..texts import breaktext, guards
from ..texts.locate import Workspace, frame_at, is_plumbing, library_frame
from .loaded import SummaryRow
from .paths import PathMap
from .tracelog import Record

_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_(?P<line>\d+)$")


def _num(value: object) -> float:
    """A finite number from a trace field, 0 for anything else (a field another torch renamed or
    retyped, or a hostile one, must not stop the reading)."""
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return x if math.isfinite(x) else 0.0


def _line_no(value: object) -> int:
    """A line number from a trace field: 1 for anything a source file cannot have."""
    n = _num(value)
    return int(n) if 1 <= n <= breaktext.MAX_LINE_NO else 1


# Ranks are said as runs; past this many runs the rest is counted, not listed.
_RANK_RUNS = 8


def ranks_text(ranks: set[int]) -> str:
    """``ranks 0–3``, ``rank 3 only``, ``ranks 0, 2, 5–7``; empty for a single-process run. A
    job of thousands of ranks reads as runs, the rest counted."""
    rs = sorted(r for r in ranks if isinstance(r, int))
    if not rs:
        return ""
    if len(rs) == 1:
        return f"rank {rs[0]} only"
    runs: list[tuple[int, int]] = []
    for r in rs:
        if runs and r == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], r)
        else:
            runs.append((r, r))
    parts = [f"{a}–{b}" if b > a else str(a) for a, b in runs[:_RANK_RUNS]]
    if len(runs) > _RANK_RUNS:
        parts.append(f"… ({len(rs)} ranks)")
    return "ranks " + ", ".join(parts)


@dataclass
class _Site:
    finding: Finding
    count: int = 0
    ranks: set[int] = field(default_factory=set)
    compiles: set[tuple[object, object, object]] = field(default_factory=set)  # (rank, frame, n)
    co: str = ""  # the compiled frame's file (recompiles): where a limit hit belongs
    base: str = ""  # the message before counts are added (findings() may run twice)


@dataclass
class _FrameStats:
    """One compiled function of the workspace, its resume functions after breaks included
    (torch gives them the function's first line): what compiling it cost and produced."""

    path: str
    line: int
    name: str
    compiles: int = 0  # successful compilations (the first, then each recompile)
    recompiles: int = 0
    graphs: int = 0
    guards: int = 0  # guards of its latest compilations, summed over its code objects
    seconds: float = 0.0
    dynamo_seconds: float = 0.0
    inductor_seconds: float = 0.0
    restarts: list[str] = field(default_factory=list)
    ranks: set[int] = field(default_factory=set)
    ids: set[tuple[object, object, object]] = field(default_factory=set)  # (rank, frame, n)


class RunReader:
    def __init__(self, ws: Workspace, paths: PathMap, provenance: str = "") -> None:
        self.ws, self.paths, self.provenance = ws, paths, provenance
        self._breaks: dict[tuple[str, int, str, str], _Site] = {}
        self._by_origin: dict[tuple[str, str], _Site] = {}
        self._recompiles: dict[tuple[object, ...], _Site] = {}
        self.frames_compiled = 0
        self.compile_seconds: dict[tuple[object, object, object], float] = {}
        self._limits: dict[str, set[int | None]] = {}  # compiled file -> ranks that hit it
        self._frame_files: dict[tuple[object, object], str] = {}
        self._failures: dict[tuple[str, int, str], _Site] = {}
        self.dynamo_seconds = 0.0
        self.inductor_seconds = 0.0
        self.torch_version = ""
        self.unreadable = 0  # records that could not be understood
        self._frame_stats: dict[tuple[str, int], _FrameStats] = {}
        self._stats_of: dict[tuple[object, object, object], _FrameStats] = {}  # by compile
        self._graphs: dict[tuple[object, object, object], int] = {}

    def _frame(self, path: str, line: int, name: str = "") -> Frame:
        local = self.paths.local(path)
        if self.ws.contains(local):
            return frame_at(local, line, name)
        return library_frame(local, line, name)

    # -- graph breaks ---------------------------------------------------------------------
    def _break(self, rec: Record) -> None:
        text = rec.payload or ""
        lines = text.splitlines()
        site = breaktext.site(lines[0]) if lines else None
        tb_at = next(
            (i for i, ln in enumerate(lines) if ln.startswith("User code traceback")), None
        )
        body = "\n".join(lines[1 : tb_at if tb_at is not None else len(lines)])
        body = body.replace("Graph Break Reason: ", "", 1)
        parsed = breaktext.parse_reason(body)
        frames = []
        for ln in lines[tb_at:] if tb_at is not None else []:
            tb = breaktext.traceback_frame(ln)
            if tb and not is_plumbing(tb[0]):
                frames.append(self._frame(*tb))
        origin_key = (self.paths.local(site[0]), site[1]) if site else ("", "")
        key_o = (f"{origin_key[0]}:{origin_key[1]}", parsed.gb_id or parsed.gb_type)
        if not frames:
            # "user stack suppressed due to duplicate graph break": the same site again.
            seen = self._by_origin.get(key_o)
            if seen is not None:
                seen.count += 1
                if rec.rank is not None:
                    seen.ranks.add(rec.rank)
            return
        user = self.ws.user_frames(frames)
        if not user:
            return  # nothing of this workspace in the stack (another project's break)
        at = user[-1]
        origin = frames[-1] if not self.ws.contains(frames[-1].path) else None
        key = (at.path, at.line, breaktext.where(origin) if origin else "", key_o[1])
        s = self._breaks.get(key)
        if s is None:
            f = breaktext.finding(at, parsed, origin, frames)
            s = self._breaks[key] = _Site(f)
            self._by_origin.setdefault(key_o, s)
        s.count += 1
        if rec.rank is not None:
            s.ranks.add(rec.rank)
        s.compiles.add(rec.compile)

    # -- recompiles -------------------------------------------------------------------------
    def _metrics(self, rec: Record) -> None:
        m = rec.body
        if m.get("fail_type") is None:
            self.frames_compiled += 1
        total = _num(m.get("entire_frame_compile_time_s"))
        inductor = _num(m.get("inductor_compile_time_s"))
        self.compile_seconds[rec.compile] = total
        self.dynamo_seconds += max(total - inductor, 0.0)
        self.inductor_seconds += inductor
        fail_type = str(m.get("fail_type") or "")
        fail = str(m.get("fail_reason") or "")
        fid = (rec.rank, rec.meta.get("frame_id"))
        co = self.paths.local(str(m.get("co_filename") or "")) or self._frame_files.get(fid, "")
        if co:
            self._frame_files[fid] = co  # a limit record may name no file: its frame does
        self.torch_version = str(m.get("pytorch_version") or self.torch_version)
        self._frame_stat(rec, co, total, inductor)
        if fail_type in ("RecompileLimitExceeded", "CacheLimitExceeded") or (
            "limit" in fail.lower() and ("recompile" in fail.lower() or "cache" in fail.lower())
        ):
            self._limits.setdefault(co, set()).add(rec.rank)
            return
        if fail_type and fail_type not in ("Unsupported",):
            self._failure(rec, co, fail_type, fail)
        reason = m.get("recompile_reason")
        if not reason or m.get("fail_type") is not None:
            return
        reason = str(reason)
        first = reason.strip().splitlines()[0]
        g = guards.classify(guards.split_reason(first.split("(HINT:")[0])[0].strip())
        frames = [self._frame(*fr) for fr in guards.frames_in(reason) if not is_plumbing(fr[0])]
        if not frames and (locs := list(guards.LOC_RE.finditer(first[: guards.MAX_GUARD_CHARS]))):
            # "# <code>  # <shortened path>:<line> in <fn>": the guard's line, no full stack.
            lm = locs[-1]
            frames = [self._frame(lm["tail"], int(lm["line"]), lm["fn"])]
        user = self.ws.user_frames(frames)
        if user:
            at = user[-1]
        else:
            co = self.paths.local(str(m.get("co_filename") or ""))
            if not self.ws.contains(co):
                return
            start = _line_no(m.get("co_firstlineno"))
            at = frame_at(co, start, str(m.get("co_name") or ""))
        origin = frames[-1] if frames and not self.ws.contains(frames[-1].path) else None
        key = (g.kind, g.var, g.dim, at.path, at.line, breaktext.where(origin) if origin else "")
        s = self._recompiles.get(key)
        if s is None:
            what = guards.what(g) + (f" in {breaktext.where(origin)}" if origin else "")
            fix = guards.FIX[g.kind].format(var=g.var, dim=g.dim or 0, seen=g.seen)
            data: FindingData = {"guard": g.text, "guard_kind": g.kind, "variable": g.var}
            f = Finding.on(
                at,
                Kind.RECOMPILE,
                Severity.INFORMATION,
                f"Recompile: {what} changed",
                explanation=f"torch's failed guard: `{g.text}`.",
                hints=[fix],
                stack=frames or [at],
                data=data,
            )
            s = self._recompiles[key] = _Site(f, co=co)
        s.count += 1
        if rec.rank is not None:
            s.ranks.add(rec.rank)
        s.compiles.add(rec.compile)

    def _frame_stat(self, rec: Record, co: str, total: float, inductor: float) -> None:
        m = rec.body
        if not co or not self.ws.contains(co):
            return
        line = _line_no(m.get("co_firstlineno"))
        name = str(m.get("co_name") or "")
        st = self._frame_stats.get((co, line))
        resumed = _RESUME.match(name)
        if st is None and resumed:
            # torch_dynamo_resume_in_f_at_5: the rest of f after its break at line 5, which
            # torch compiles as a function of its own. Counted with f, as the user wrote it.
            st = max(
                (
                    s
                    for s in self._frame_stats.values()
                    if s.path == co and s.name == resumed["fn"] and s.line <= line
                ),
                key=lambda s: s.line,
                default=None,
            )
        if st is None:
            st = self._frame_stats[(co, line)] = _FrameStats(co, line, name)
        cid = rec.compile
        st.ids.add(cid)
        self._stats_of[cid] = st
        if m.get("fail_type") is None:
            st.compiles += 1
            st.guards += int(_num(m.get("guard_count")))
        if m.get("recompile_reason"):
            st.recompiles += 1
        st.seconds += total
        st.dynamo_seconds += max(total - inductor, 0.0)
        st.inductor_seconds += inductor
        st.restarts += [
            str(r).strip().splitlines()[0] for r in m.get("restart_reasons") or [] if str(r).strip()
        ]
        if rec.rank is not None:
            st.ranks.add(rec.rank)

    def _failure(self, rec: Record, co: str, fail_type: str, fail: str) -> None:
        """A frame torch failed to compile (not a graph break: an error in tracing or in the
        backend): it runs eagerly from then on."""
        if not self.ws.contains(co):
            return
        line = _line_no(rec.body.get("co_firstlineno"))
        key = (co, line, fail_type)
        s = self._failures.get(key)
        if s is None:
            at = frame_at(co, line, str(rec.body.get("co_name") or ""))
            first = fail.strip().splitlines()[0] if fail.strip() else fail_type
            f = Finding.on(
                at,
                Kind.ERROR,
                Severity.WARNING,
                f"torch.compile failed on {at.name or 'this frame'}: {fail_type}: {first[:200]}",
                explanation="The frame runs eagerly from then on.",
                stack=[at],
            )
            s = self._failures[key] = _Site(f)
        s.count += 1
        if rec.rank is not None:
            s.ranks.add(rec.rank)

    def feed(self, records: Iterable[Record]) -> None:
        for rec in records:
            try:
                self._feed_one(rec)
            except Exception:
                # A record shaped unlike any torch we know: skipped and counted, never fatal.
                self.unreadable += 1

    def _feed_one(self, rec: Record) -> None:
        if rec.name == "artifact" and rec.body.get("name") == "dynamo_graph_break_reason":
            self._break(rec)
        elif rec.name == "compilation_metrics":
            self._metrics(rec)
        elif rec.name == "dynamo_output_graph":
            cid = rec.compile
            self._graphs[cid] = self._graphs.get(cid, 0) + 1
        elif rec.name == "artifact" and rec.body.get("name") == "torch_version":
            self.torch_version = (rec.payload or "").strip().strip('"') or self.torch_version

    def _target(self, st: _FrameStats) -> str:
        rel = os.path.relpath(st.path, self.ws.root)
        return f"{rel}::{st.name}@{st.line}"

    def _frame_of(self, ids: set[tuple[object, object, object]]) -> _FrameStats | None:
        """The compiled function of any of these compilations."""
        return next((self._stats_of[i] for i in ids if i in self._stats_of), None)

    def findings(self) -> list[Finding]:
        out = []
        for s in self._breaks.values():
            st = self._frame_of(s.compiles)
            if st is not None:
                s.finding.target = self._target(st)
            out.append(self._finish(s, "graph break"))
        for s in self._failures.values():
            out.append(self._finish(s, "failure"))
        # The limit belongs to the frame torch names: its group that recompiled most.
        worst: dict[str, _Site] = {}
        for s in self._recompiles.values():
            if s.co in self._limits and (s.co not in worst or s.count > worst[s.co].count):
                worst[s.co] = s
        for s in self._recompiles.values():
            f = s.finding
            if (st := self._frame_of(s.compiles)) is not None:
                f.target = self._target(st)
            f.message = s.base or f.message
            s.base = f.message
            per_rank = int(s.count / max(len(s.ranks), 1))
            hit = worst.get(s.co) is s
            f.data["limit_hit"] = hit
            if per_rank >= 2 or hit:
                f.severity = Severity.WARNING
                plural = "s" if per_rank != 1 else ""
                f.message = f.message.replace("Recompile:", "Recompile risk:", 1).replace(
                    " changed", f" is specialised; {per_rank} recompile{plural}"
                )
                if hit:
                    f.message += "; hit the recompile limit, later calls fall back to eager"
            f.data["recompiles"] = s.count
            out.append(self._finish(s, "recompile"))
        out.sort(key=lambda f: (f.path, f.line, f.column))
        return out

    def _finish(self, s: _Site, what: str) -> Finding:
        f = s.finding
        seen = ranks_text(s.ranks)
        parts = [p for p in (self.provenance, seen) if p]
        if s.count > 1:
            parts.append(f"{s.count}×")
        f.note = "seen in " + ", ".join(parts) if parts else ""
        return f

    def summary(self) -> list[SummaryRow]:
        """One row per (file, line, break id), the costliest first."""
        rows = []
        for s in self._breaks.values():
            f = s.finding
            rows.append(
                SummaryRow(
                    f.path,
                    f.line,
                    f.gb_id,
                    f.message.removeprefix("Graph break: "),
                    s.count,
                    len(s.compiles),
                    ranks_text(s.ranks),
                    sum(self.compile_seconds.get(c, 0.0) for c in s.compiles),
                )
            )
        rows.sort(key=lambda r: (-r.compile_seconds, -r.count, r.path, r.line))
        return rows

    def reports(self) -> list[TargetReport]:
        """One report per compiled workspace function: graphs, breaks, recompiles, guards,
        restarts and compile time, the way the engine reports a target."""
        now = time.time()
        out = []
        breaks_in: dict[str, int] = {}
        for s in self._breaks.values():
            st = self._frame_of(s.compiles)
            if st is not None:
                breaks_in[self._target(st)] = breaks_in.get(self._target(st), 0) + s.count
        for st in sorted(self._frame_stats.values(), key=lambda st: (st.path, st.line)):
            target = self._target(st)
            out.append(
                TargetReport(
                    target=target,
                    path=st.path,
                    line=st.line,
                    kind="run",
                    graph_count=sum(self._graphs.get(i, 0) for i in st.ids),
                    break_count=breaks_in.get(target, 0),
                    recompile_count=st.recompiles,
                    environment={
                        "torch": self.torch_version or None,
                        "run": self.provenance,
                        "ranks": ranks_text(st.ranks),
                        "compiles": st.compiles,
                        "guards": st.guards,
                        "restarts": st.restarts,
                        "compile_seconds": round(st.seconds, 4),
                        "dynamo_seconds": round(st.dynamo_seconds, 4),
                        "inductor_seconds": round(st.inductor_seconds, 4),
                    },
                    measured_at=now,
                )
            )
        return out

    def results(self) -> list[FileResult]:
        """Findings by the file they sit in; each compiled function's report in its file."""
        by_file: dict[str, FileResult] = {}

        def of(path: str) -> FileResult:
            return by_file.setdefault(path, FileResult(path, file_hash(path) or "", ran=True))

        for f in self.findings():
            of(f.path).findings.append(f)
        for r in self.reports():
            of(r.path).reports.append(r)
        return [by_file[p] for p in sorted(by_file)]
