"""Collect torch's structured trace (the ``torch.__trace`` logger) in memory.

This is what tlparse reads from TORCH_TRACE files; we take the records directly: compilation
metrics (with recompile reasons), guard additions with user stacks, shape specialisations, and
graph-break artifacts. A graph-break artifact is logged while the ``Unsupported`` exception is
being handled, so ``sys.exc_info()`` in the handler gives the exception with its ``gb_type`` and
``real_stack``.
"""

from __future__ import annotations

import logging
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any

from ..findings import Frame
from ..runs.tracelog import META_KEYS
from ..texts.locate import clean_function_name

# Events we keep; the rest (graph dumps, inductor output) are dropped on arrival.
_KEEP = {
    "compilation_metrics",
    "guard_added",
    "guard_added_fast",
    "symbolic_shape_specialization",
    "artifact",
    "dynamo_start",
}
_KEEP_ARTIFACTS = {"dynamo_graph_break_reason", "recompile_reasons"}


@dataclass
class TraceEvent:
    name: str
    metadata: dict[str, Any]
    payload: Any
    frame_id: int | None
    frame_compile_id: int | None
    exc: BaseException | None = None


@dataclass
class _State:
    strings: dict[int, str] = field(default_factory=dict)
    events: list[TraceEvent] = field(default_factory=list)


class TraceCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self._state = _State()
        self._logger = logging.getLogger("torch.__trace")
        self._old_level = self._logger.level

    def __enter__(self) -> TraceCapture:
        self._state = _State()
        self._old_level = self._logger.level
        self._logger.setLevel(logging.DEBUG)
        self._logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self._logger.removeHandler(self)
        self._logger.setLevel(self._old_level)

    def emit(self, record: logging.LogRecord) -> None:
        md = getattr(record, "metadata", None)
        if not isinstance(md, dict):
            return
        if "str" in md:
            s, idx = md["str"]
            self._state.strings[int(idx)] = s
            return
        names = [k for k in md if k not in META_KEYS]
        if not names or names[0] not in _KEEP:
            return
        name = names[0]
        body = md[name] if isinstance(md[name], dict) else {}
        exc = None
        if name == "artifact":
            if body.get("name") not in _KEEP_ARTIFACTS:
                return
            if body.get("name") == "dynamo_graph_break_reason":
                exc = sys.exc_info()[1]
        self._state.events.append(
            TraceEvent(
                name=name,
                metadata=body,
                payload=getattr(record, "payload", None),
                frame_id=md.get("frame_id"),
                frame_compile_id=md.get("frame_compile_id"),
                exc=exc,
            )
        )

    @property
    def events(self) -> list[TraceEvent]:
        return self._state.events

    def first(self, n: int) -> TraceCapture:
        """The first ``n`` events alone (what one call's compiles logged, a later call's left
        out), read as this capture reads them; a view, never entered as a handler."""
        view = TraceCapture()
        view._state = _State(self._state.strings, self._state.events[:n])
        return view

    def of(self, name: str, artifact: str | None = None) -> list[TraceEvent]:
        return [
            e
            for e in self._state.events
            if e.name == name and (artifact is None or e.metadata.get("name") == artifact)
        ]

    def frames(self, stack: list[dict[str, Any]] | None) -> list[Frame]:
        """Structured-trace frames (filenames interned as ints) to our frames."""
        out = []
        for f in stack or []:
            fname = f.get("filename")
            if isinstance(fname, int):
                fname = self._state.strings.get(fname, "")
            out.append(
                Frame(
                    path=str(fname or ""),
                    line=int(f.get("line") or 0),
                    name=clean_function_name(str(f.get("name") or "")),
                    code=str(f.get("loc") or ""),
                )
            )
        return out


class GraphBreakLog(TraceCapture):
    """The graph-break records alone, from torch's ``graph_breaks`` log artifact (what
    ``TORCH_LOGS=graph_breaks`` prints) instead of the structured trace.

    torch logs each graph break both ways, at the same place and with the same exception
    current; but once the ``torch.__trace`` logger has a handler, torch builds every structured
    payload (guards, graph code, chromium events), which costs ~15-20 % of an explain. The
    records come out as the trace's ``dynamo_graph_break_reason`` artifacts, so readers of a
    ``TraceCapture`` read these unchanged.
    """

    _SUFFIX = ".__graph_breaks"

    def __enter__(self) -> GraphBreakLog:
        # The artifact loggers exist once Dynamo's tracer is imported; torch imports it lazily.
        import torch._dynamo.symbolic_convert  # noqa: F401

        self._state = _State()
        names = [n for n in logging.Logger.manager.loggerDict if n.endswith(self._SUFFIX)]
        self._saved = []
        for name in names:
            log = logging.getLogger(name)
            self._saved.append((log, log.level, log.propagate))
            # Ours alone: torch's own handlers (stderr) must not print these.
            log.setLevel(logging.DEBUG)
            log.propagate = False
            log.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        for log, level, propagate in self._saved:
            log.removeHandler(self)
            log.setLevel(level)
            log.propagate = propagate

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else sys.exc_info()[1]
        try:
            text = record.getMessage()
        except Exception:  # a malformed record must not break the analysis
            text = str(record.msg)
        if exc is not None:
            text += "\n" + "".join(traceback.format_exception(exc))
        self._state.events.append(
            TraceEvent(
                name="artifact",
                metadata={"name": "dynamo_graph_break_reason"},
                payload=text,
                frame_id=None,
                frame_compile_id=None,
                exc=exc,
            )
        )
