"""The functions a run compiled: each frame torch compiled, which function of the user's it is,
and what compiling it cost and produced, credited by each record's own compile id.

A compiled frame is the user's function (its resume functions after a break count with it),
or a library function torch compiled on its own (a ``Conv1d.forward`` after a break in the
caller): that one is reported on the user's line that called it, from the stack torch logs
when it starts a frame (``dynamo_start``), with the library frame named.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ..findings import Frame
from ..texts.breaktext import where
from ..texts.locate import Workspace
from .tracelog import Record, line_number, number

CompileId = tuple[object, object, object]  # (rank, frame id, frame compile id)
FrameKey = tuple[object, object]  # (rank, frame id)
_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_(?P<line>\d+)$")


@dataclass
class FunctionStats:
    """One compiled function: the user's (``library`` None) or a library function compiled on
    its own, shown at the user's call (``path``/``line``) with its own frame in ``library``."""

    path: str
    line: int
    name: str
    library: Frame | None = None
    compiles: int = 0  # successful compilations (the first, then each recompile)
    recompiles: int = 0
    guards: int = 0  # guards of its compilations, summed over its code objects
    seconds: float = 0.0
    dynamo_seconds: float = 0.0
    inductor_seconds: float = 0.0
    restarts: list[str] = field(default_factory=list)
    ranks: set[int] = field(default_factory=set)
    ids: set[CompileId] = field(default_factory=set)
    cache: Counter[str] = field(default_factory=Counter)  # "fx_graph_cache_hit": 2, ...


class CompiledFunctions:
    def __init__(self, ws: Workspace, frame: Callable[[str, int, str], Frame]) -> None:
        self.ws, self._frame = ws, frame
        self._starts: dict[FrameKey, list[Frame]] = {}
        self._called_at: dict[tuple[str, str], Frame] = {}  # library function -> user line
        self._stats: dict[tuple[str, int, str], FunctionStats] = {}
        self._of: dict[CompileId, FunctionStats] = {}
        self.graphs: Counter[CompileId] = Counter()
        self.breaks: Counter[CompileId] = Counter()  # break records, by the compile they were in

    # -- what torch logs ------------------------------------------------------------------
    def started(self, rec: Record) -> None:
        """``dynamo_start``: the Python stack down to the frame torch starts compiling."""
        stack = rec.body.get("stack")
        frames = [
            self._frame(str(f.get("filename") or ""), int(f.get("line") or 0), str(f.get("name")))
            for f in stack or []
            if isinstance(f, dict) and not self.ws.plumbing(str(f.get("filename") or ""))
        ]
        self._starts[(rec.rank, rec.meta.get("frame_id"))] = frames[-64:]

    def called_at(self, frames: list[Frame]) -> None:
        """A break's stack, inlining library functions from the user's line: torch compiles
        each of them on its own from then on, called from that line."""
        user = self.ws.user_frames(frames)
        if not user:
            return
        below = frames[frames.index(user[-1]) + 1 :]
        for f in below:
            self._called_at.setdefault((f.path, f.name), user[-1])

    def caller(self, rec: Record) -> Frame | None:
        """The user's line that called a record's frame: where a break showed the user's line
        calling that library function, else the deepest workspace frame of the frame's start
        stack (torch 2.13+ leaves the frames it runs itself out of that stack)."""
        co, name = str(rec.body.get("co_filename") or ""), str(rec.body.get("co_name") or "")
        fn = resumed["fn"] if (resumed := _RESUME.match(name)) else name
        if co and (known := self._called_at.get((self._frame(co, 1, fn).path, fn))):
            return known
        frames = self._starts.get((rec.rank, rec.meta.get("frame_id")), [])
        user = self.ws.user_frames(frames[:-1])
        return user[-1] if user else None

    def compiled(self, rec: Record, co: str, total: float, inductor: float) -> FunctionStats | None:
        """A ``compilation_metrics`` record: credited to its function, a workspace one or a
        library one seen from the user's call."""
        m = rec.body
        line = line_number(m.get("co_firstlineno"))
        name = str(m.get("co_name") or "")
        st = self._function(rec, co, line, name)
        if st is None:
            return None
        st.ids.add(rec.compile)
        self._of[rec.compile] = st
        if m.get("fail_type") is None:
            st.compiles += 1
            st.guards += int(number(m.get("guard_count")))
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
        return st

    def _function(self, rec: Record, co: str, line: int, name: str) -> FunctionStats | None:
        if not co:
            return None
        resumed = _RESUME.match(name)
        if self.ws.contains(co):
            key = (co, line, "")
            st = self._stats.get(key)
            if st is None and resumed:
                # torch_dynamo_resume_in_f_at_5: the rest of f after its break at line 5, which
                # torch compiles as a function of its own. Counted with f, as the user wrote it.
                st = max(
                    (
                        s
                        for s in self._stats.values()
                        if s.path == co and s.name == resumed["fn"] and s.line <= line
                    ),
                    key=lambda s: s.line,
                    default=None,
                )
            if st is None:
                st = self._stats[key] = FunctionStats(co, line, name)
            return st
        user = self.caller(rec)
        if user is None:
            return None  # a library frame no user line reached (another project's)
        fn = resumed["fn"] if resumed else name
        key = (user.path, user.line, f"{co}::{fn}")  # its resume functions count with it
        st = self._stats.get(key)
        lib = self._frame(co, line, fn)
        if st is None:
            st = self._stats[key] = FunctionStats(user.path, user.line, lib.name, library=lib)
        return st

    def of(self, cid: CompileId) -> FunctionStats | None:
        return self._of.get(cid)

    def busiest(self, ids: Counter[CompileId]) -> FunctionStats | None:
        """The function these compiles (with their counts) credit most, the same on every run
        (ties by place, never by set order)."""
        per: Counter[int] = Counter()
        by_id: dict[int, FunctionStats] = {}
        for cid, n in ids.items():
            st = self._of.get(cid)
            if st is not None:
                per[id(st)] += n
                by_id[id(st)] = st
        if not per:
            return None
        return min(by_id.values(), key=lambda s: (-per[id(s)], s.path, s.line, s.name))

    def all(self) -> list[FunctionStats]:
        return sorted(self._stats.values(), key=lambda s: (s.path, s.line, s.name))

    def target(self, st: FunctionStats) -> str:
        """``models/cnn.py::forward@12``; a library function: at the user's call,
        ``train.py::forward@30 (torch/nn/modules/conv.py:370)``."""
        rel = os.path.relpath(st.path, self.ws.root)
        own = f" ({where(st.library)})" if st.library is not None else ""
        return f"{rel}::{st.name}@{st.line}{own}"

    def graph_count(self, st: FunctionStats) -> int:
        return sum(self.graphs[i] for i in st.ids)

    def break_count(self, st: FunctionStats) -> int:
        return sum(self.breaks[i] for i in st.ids)
