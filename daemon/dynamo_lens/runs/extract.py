"""Findings from a run's structured trace: the same ``Finding`` the engine makes, with the
same wording (``texts.breaktext``, ``texts.guards``), attributed to ranks.

Graph breaks: each ``dynamo_graph_break_reason`` artifact, at the deepest workspace frame of
its traceback, naming the library line when torch broke inside a library. Recompiles: each
compilation's ``recompile_reason``, classified and grouped by guard and line; hitting the
recompile limit. Fallbacks (``fallbacks.py``): where the code ran eagerly or compiled cold. A
library function torch compiled on its own is seen from the user's line that called it
(``functions.py``); a record with no workspace frame at all is reported at the path it names,
and counted. A break or recompile seen on several ranks, or many times, is one finding with
counts; each is credited to the compiled function whose records it came from.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..findings import (
    FileResult,
    Finding,
    Frame,
    TargetReport,
)
from ..texts import breaktext, guards
from ..texts.locate import Workspace, frame_at, is_library_path, library_frame
from ..texts.source import file_hash
from .fallbacks import READ_ARTIFACTS, Fallbacks
from .functions import CompiledFunctions, CompileId
from .loaded import SummaryRow
from .paths import PathMap
from .tracelog import Record, line_number, number

# Recorded paths remembered to complete a guard's shortened one.
_MAX_RECORDED = 100_000
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
    compiles: Counter[CompileId] = field(default_factory=Counter)  # records per compile
    co: str = ""  # the compiled frame's file (recompiles): where a limit hit belongs
    what: str = ""  # a recompile's guard in words, worded with its counts in findings()
    located: bool = True  # a recompile whose guard names its line


class RunReader:
    def __init__(self, ws: Workspace, paths: PathMap, provenance: str = "") -> None:
        self.ws, self.paths, self.provenance = ws, paths, provenance
        self._breaks: dict[tuple[str, int, str, str], _Site] = {}
        self._by_origin: dict[tuple[str, str], _Site] = {}
        self._recompiles: dict[tuple[object, ...], _Site] = {}
        self.frames_compiled = 0
        self.compile_seconds: dict[CompileId, float] = {}
        self._limits: dict[str, set[int | None]] = {}  # compiled file -> ranks that hit it
        self._frame_files: dict[tuple[object, object], str] = {}
        self.dynamo_seconds = 0.0
        self.inductor_seconds = 0.0
        self.torch_version = ""
        self.unreadable = 0  # records that could not be understood
        # Records with no frame in the workspace, reported at the paths they name.
        self.outside = 0
        self._recorded: set[str] = set()  # absolute paths the trace names
        self.functions = CompiledFunctions(ws, self._frame)
        self.fallbacks = Fallbacks(ws, self._frame, self.functions, paths.local)

    def _frame(self, path: str, line: int, name: str = "") -> Frame:
        if path.startswith("/") and len(self._recorded) < _MAX_RECORDED:
            self._recorded.add(path)
        local = self.paths.local(path)
        if self.ws.contains(local):
            return frame_at(local, line, name)
        return library_frame(local, line, name)

    def _place(self, rec: Record, frames: list[Frame]) -> tuple[Frame, Frame | None, list[Frame]]:
        """Where a record's finding sits: the deepest workspace frame of its stack, with the
        library frame torch stopped in; for a library function torch compiled on its own, the
        user's line that called it; else (sources not in this workspace) the deepest frame
        that is not a library's, at the path the trace names, and counted."""
        user = self.ws.user_frames(frames)
        last = frames[-1]
        origin = last if not self.ws.contains(last.path) else None
        if user:
            return user[-1], origin, frames
        caller = self.functions.caller(rec)
        if caller is not None:
            return caller, origin, [caller, *frames]
        self.outside += 1
        own = [f for f in frames if not is_library_path(f.path)]
        at = own[-1] if own else frames[0]
        return at, (origin if origin is not at else None), frames

    def _full(self, tail: str) -> str:
        """A guard's shortened path (torch cuts the start off) as the trace names it elsewhere,
        where it does; else the tail, which the workspace mapping resolves by its suffix."""
        if tail.startswith("/"):
            return tail
        return min((p for p in self._recorded if p.endswith(tail)), key=len, default=tail)

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
            if tb and not self.ws.plumbing(tb[0]):
                frames.append(self._frame(*tb))
        self.functions.breaks[rec.compile] += 1
        origin_key = (self.paths.local(site[0]), site[1]) if site else ("", "")
        key_o = (f"{origin_key[0]}:{origin_key[1]}", parsed.gb_id or parsed.gb_type)
        if not frames:
            # "user stack suppressed due to duplicate graph break": the same site again (a
            # library function torch broke in while inlining it, then compiled on its own).
            seen = self._by_origin.get(key_o)
            if seen is not None:
                seen.count += 1
                if rec.rank is not None:
                    seen.ranks.add(rec.rank)
                seen.compiles[rec.compile] += 1
            return
        self.functions.called_at(frames)
        at, origin, stack = self._place(rec, frames)
        key = (at.path, at.line, breaktext.where(origin) if origin else "", key_o[1])
        s = self._breaks.get(key)
        if s is None:
            f = breaktext.finding(at, parsed, origin, stack)
            s = self._breaks[key] = _Site(f)
            self._by_origin.setdefault(key_o, s)
        s.count += 1
        if rec.rank is not None:
            s.ranks.add(rec.rank)
        s.compiles[rec.compile] += 1

    # -- compiled frames, recompiles ------------------------------------------------------
    def _metrics(self, rec: Record) -> None:
        m = rec.body
        if m.get("fail_type") is None:
            self.frames_compiled += 1
        total = number(m.get("entire_frame_compile_time_s"))
        inductor = number(m.get("inductor_compile_time_s"))
        self.compile_seconds[rec.compile] = total
        self.dynamo_seconds += max(total - inductor, 0.0)
        self.inductor_seconds += inductor
        fail = str(m.get("fail_reason") or "")
        fid = (rec.rank, rec.meta.get("frame_id"))
        co = self.paths.local(str(m.get("co_filename") or "")) or self._frame_files.get(fid, "")
        if co:
            self._frame_files[fid] = co  # a limit record may name no file: its frame does
        self.torch_version = str(m.get("pytorch_version") or self.torch_version)
        self.functions.compiled(rec, co, total, inductor)
        if str(m.get("fail_type") or "") in ("RecompileLimitExceeded", "CacheLimitExceeded") or (
            "limit" in fail.lower() and ("recompile" in fail.lower() or "cache" in fail.lower())
        ):
            self._limits.setdefault(co, set()).add(rec.rank)
            return
        self.fallbacks.metrics(rec, co)
        reason = m.get("recompile_reason")
        if reason and m.get("fail_type") is None:
            self._recompile(rec, str(reason), co)

    def _recompile(self, rec: Record, reason: str, co: str) -> None:
        m = rec.body
        first = reason.strip().splitlines()[0]
        g = guards.classify(guards.split_reason(first.split("(HINT:")[0])[0].strip())
        frames = [
            self._frame(*fr) for fr in guards.frames_in(reason) if not self.ws.plumbing(fr[0])
        ]
        if not frames and (locs := list(guards.LOC_RE.finditer(first[: guards.MAX_GUARD_CHARS]))):
            # "# <code>  # <shortened path>:<line> in <fn>": the guard's line, no full stack.
            lm = locs[-1]
            frames = [self._frame(self._full(lm["tail"]), int(lm["line"]), lm["fn"])]
        located = bool(frames)
        if not frames and co:
            # No line of the guard's own (torch 2.8 names it only now and then): the compiled
            # function's first line, merged below into the located site of the same guard.
            frames = [self._frame(co, line_number(m.get("co_firstlineno")), str(m.get("co_name")))]
        if not frames:
            return
        at, origin, stack = self._place(rec, frames)
        key = (g.kind, g.var, g.dim, at.path, at.line, breaktext.where(origin) if origin else "")
        if not located:
            key = (g.kind, g.var, g.dim, co, line_number(m.get("co_firstlineno")), "unlocated")
        s = self._recompiles.get(key)
        if s is None:
            place = breaktext.where(origin) if origin else ""
            what = guards.what(g) + (f" in {place}" if place else "")
            f = guards.finding(
                at,
                g,
                1,
                origin=place,
                stack=stack,
                explanation=f"torch's failed guard: `{g.text}`.",
            )
            s = self._recompiles[key] = _Site(f, co=co, located=located, what=what)
        s.count += 1
        if rec.rank is not None:
            s.ranks.add(rec.rank)
        s.compiles[rec.compile] += 1

    def feed(self, records: Iterable[Record]) -> None:
        for rec in records:
            try:
                self._feed_one(rec)
            except Exception:
                # A record shaped unlike any torch we know: skipped and counted, never fatal.
                self.unreadable += 1

    @staticmethod
    def reads(event: str, artifact: object = None) -> bool:
        """Whether ``_feed_one`` reads a record of this event (and artifact name): a capture
        that writes only these (kernel/capture.py) loses nothing the reader would find."""
        if event == "artifact":
            return artifact in READ_ARTIFACTS
        return event in ("str", "compilation_metrics", "dynamo_start", "dynamo_output_graph")

    def _feed_one(self, rec: Record) -> None:
        artifact = rec.body.get("name") if rec.name == "artifact" else None
        if artifact == "dynamo_graph_break_reason":
            self._break(rec)
        elif rec.name == "compilation_metrics":
            self._metrics(rec)
        elif rec.name == "dynamo_start":
            self.functions.started(rec)
        elif rec.name == "dynamo_output_graph":
            self.functions.graphs[rec.compile] += 1
        elif artifact == "torch_version":
            self.torch_version = (rec.payload or "").strip().strip('"') or self.torch_version
        elif isinstance(artifact, str):  # READ_ARTIFACTS: keep ``reads`` in step with this
            self.fallbacks.artifact(rec, artifact)

    def _credit(self, s: _Site) -> None:
        """A finding's target: the compiled function its records were in (the one most of
        them were in, where one line broke in several)."""
        st = self.functions.busiest(s.compiles)
        if st is not None:
            s.finding.target = self.functions.target(st)

    def findings(self) -> list[Finding]:
        self.fallbacks.resolve()
        out = []
        broke_at = set()
        for s in self._breaks.values():
            self._credit(s)
            out.append(self._finish(s))
            broke_at.add((s.finding.path, s.finding.line))
        for fb in self.fallbacks.sites.values():
            f = fb.finding
            if f.data.get("fallback") == "skipped" and (f.path, f.line) in broke_at:
                continue  # torch logged the break that made it skip (2.13+): that one says so
            s = _Site(f, fb.count, fb.ranks, fb.compiles)
            self._credit(s)
            out.append(self._finish(s))
        self._merge_unlocated()
        # The limit belongs to the frame torch names: its group that recompiled most.
        worst: dict[str, _Site] = {}
        for s in self._recompiles.values():
            if s.co in self._limits and (s.co not in worst or s.count > worst[s.co].count):
                worst[s.co] = s
        for s in self._recompiles.values():
            f = s.finding
            self._credit(s)
            per_rank = int(s.count / max(len(s.ranks), 1))
            hit = worst.get(s.co) is s
            f.data["limit_hit"] = hit
            # Worded once the counts are known, as the worker words its own (texts/guards.py).
            f.message, f.severity = guards.headline(s.what, per_rank, limit_hit=hit)
            f.data["recompiles"] = s.count
            out.append(self._finish(s))
        out.sort(key=lambda f: (f.path, f.line, f.column))
        return out

    def _merge_unlocated(self) -> None:
        """A recompile whose guard named no line joins the located one of the same guard in
        the same function (torch 2.8 names the line for some recompiles of a guard only)."""
        for key, s in list(self._recompiles.items()):
            if s.located:
                continue
            kind, var, dim = key[:3]
            same = [
                o
                for k, o in self._recompiles.items()
                if o.located
                and k[:3] == (kind, var, dim)
                and o.co == s.co
                and self.functions.busiest(o.compiles) is self.functions.busiest(s.compiles)
            ]
            if same:
                into = min(same, key=lambda o: (o.finding.line, o.finding.column))
                into.count += s.count
                into.ranks |= s.ranks
                into.compiles.update(s.compiles)
                del self._recompiles[key]

    def _finish(self, s: _Site) -> Finding:
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
        """One report per compiled function (a library one at the user's call): graphs,
        breaks, recompiles, guards, restarts and compile time, each from the records of that
        function's own compiles, the way the engine reports a target."""
        now = time.time()
        out = []
        for st in self.functions.all():
            env: dict[str, object] = {
                "torch": self.torch_version or None,
                "run": self.provenance,
                "ranks": ranks_text(st.ranks),
                "compiles": st.compiles,
                "guards": st.guards,
                "restarts": st.restarts,
                "compile_seconds": round(st.seconds, 4),
                "dynamo_seconds": round(st.dynamo_seconds, 4),
                "inductor_seconds": round(st.inductor_seconds, 4),
            }
            if st.library is not None:
                env["library"] = breaktext.where(st.library)
            if st.cache:
                env["cache"] = dict(sorted(st.cache.items()))
            out.append(
                TargetReport(
                    target=self.functions.target(st),
                    path=st.path,
                    line=st.line,
                    kind="run",
                    graph_count=self.functions.graph_count(st),
                    break_count=self.functions.break_count(st),
                    recompile_count=st.recompiles,
                    environment=env,
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
