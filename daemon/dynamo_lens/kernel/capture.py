"""torch's structured trace, switched on in this process from now on: one log per cell.

TORCH_TRACE is read when torch is imported (pytorch#143274), so a running kernel cannot set
it. The trace is a logger, though (``torch.__trace``), which torch writes to whenever it has a
handler: a file handler with torch's own trace formatter writes the lines TORCH_TRACE would,
and the run reader (runs/tracelog.py) reads them as it reads any run. Only the records the
reader reads are written (``RunReader.reads``); a compiled graph's text (the reader counts
graphs) and the compiler's settings in each frame's metrics are left out. Strings torch
interned before a log began are handed to the reader from torch's table (``strings``)
instead of being written into every log."""

from __future__ import annotations

import contextlib
import copy
import logging
from pathlib import Path

from ..runs.extract import RunReader
from ..runs.tracelog import META_KEYS
from ..worker import torchcompat


def _event(record: logging.LogRecord) -> tuple[str, object]:
    md = getattr(record, "metadata", None)
    if not isinstance(md, dict):
        return "", None
    name = next((k for k in md if k not in META_KEYS), "")
    body = md.get(name)
    return name, body.get("name") if isinstance(body, dict) else None


class _ReadOnly(logging.Filter):
    """Drop, before torch's formatter spends anything on them, the records nobody reads."""

    def filter(self, record: logging.LogRecord) -> bool:
        return RunReader.reads(*_event(record))


class _Lean(logging.Formatter):
    """torch's trace formatter, with a graph's text left out: the reader only counts graphs.
    The record is copied, never changed (torch's own handlers see it too)."""

    def __init__(self, torchs: logging.Formatter) -> None:
        super().__init__()
        self.torchs = torchs

    def format(self, record: logging.LogRecord) -> str:
        event = _event(record)[0]
        if event == "dynamo_output_graph":
            record = copy.copy(record)
            md = dict(getattr(record, "metadata", {}))
            md.pop("has_payload", None)
            record.__dict__.update({"metadata": md, "payload": None})
        elif event == "compilation_metrics":
            # Nine tenths of it are the compiler's settings (inductor_config and the like, tens
            # of kilobytes per frame), which the reader never reads.
            record = copy.copy(record)
            md = dict(getattr(record, "metadata", {}))
            metrics = md.get(event)
            if isinstance(metrics, dict):
                md[event] = {k: v for k, v in metrics.items() if not k.endswith("_config")}
            record.__dict__["metadata"] = md
        return self.torchs.format(record)


class CellLogs:
    def __init__(self, folder: Path) -> None:
        import torch._logging._internal as internal

        self.folder = folder
        self._logger: logging.Logger = internal.trace_log
        self._formatter = _Lean(internal.TorchLogsFormatter(trace=True))
        self._handler: logging.FileHandler | None = None
        self._level = self._logger.level
        self._guards: contextlib.ExitStack | None = None
        self.path: Path | None = None

    def start(self, name: str) -> Path:
        """A new log, from now until ``stop`` (opened on its first record: a cell that
        compiles nothing leaves no file)."""
        self.stop()
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{name}.log"
        handler = logging.FileHandler(path, mode="w", encoding="utf-8", delay=True)
        handler.setFormatter(self._formatter)
        handler.addFilter(_ReadOnly())
        handler.setLevel(logging.DEBUG)
        # torch keeps this logger at DEBUG and writes to it only where it has a handler.
        self._logger.setLevel(logging.DEBUG)
        self._logger.addHandler(handler)
        self._handler, self.path = handler, path
        # Before torch 2.9 a recompile's guard names its line only while the guards log is on.
        self._guards = contextlib.ExitStack()
        self._guards.enter_context(torchcompat.guard_user_lines())
        return path

    def stop(self) -> Path | None:
        """Stop writing; the finished log's path (None when none was open)."""
        handler, path = self._handler, self.path
        if handler is None:
            return None
        self._logger.removeHandler(handler)
        handler.close()
        self._logger.setLevel(self._level)
        if self._guards is not None:
            self._guards.close()
        self._handler = self.path = self._guards = None
        return path


def strings() -> dict[int, str]:
    """torch's string table now: index -> text (file names in stacks are interned once)."""
    try:
        from torch._logging.structured import INTERN_TABLE
    except ImportError:  # a torch without a string table writes names in full
        return {}
    return {index: text for text, index in list(INTERN_TABLE.items())}
