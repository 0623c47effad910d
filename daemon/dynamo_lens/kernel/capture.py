"""torch's structured trace, switched on in this process from now on: one log per cell.

TORCH_TRACE is read when torch is imported (pytorch#143274), so a running kernel cannot set
it. The trace is a logger, though (``torch.__trace``), which torch writes to whenever it has a
handler: a file handler with torch's own trace formatter writes the very lines TORCH_TRACE
would, and the run reader (runs/tracelog.py) reads them as it reads any run. Strings torch
interned before the capture began (file names, in its string table) are written at the top
of each log, so that every log reads on its own."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any


class CellLogs:
    def __init__(self, folder: Path) -> None:
        import torch._logging._internal as internal

        self.folder = folder
        self._logger: logging.Logger = internal.trace_log
        self._formatter: logging.Formatter = internal.TorchLogsFormatter(trace=True)
        self._handler: logging.FileHandler | None = None
        self._level = self._logger.level
        self.path: Path | None = None

    def start(self, name: str) -> Path:
        """A new log, from now until ``stop``."""
        self.stop()
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{name}.log"
        handler = logging.FileHandler(path, mode="w", encoding="utf-8")
        handler.setFormatter(self._formatter)
        handler.setLevel(logging.DEBUG)
        self._replay_strings(handler)
        # torch keeps this logger at DEBUG and writes to it only where it has a handler.
        self._logger.setLevel(logging.DEBUG)
        self._logger.addHandler(handler)
        self._handler, self.path = handler, path
        return path

    def stop(self) -> Path | None:
        """Stop writing; the finished log's path (None when none was open)."""
        handler, path = self._handler, self.path
        if handler is None:
            return None
        self._logger.removeHandler(handler)
        handler.close()
        self._logger.setLevel(self._level)
        self._handler = self.path = None
        return path

    def _replay_strings(self, handler: logging.Handler) -> None:
        try:
            from torch._logging.structured import INTERN_TABLE
        except ImportError:  # a torch without a string table writes names in full
            return
        for text, index in list(INTERN_TABLE.items()):
            record = logging.LogRecord(self._logger.name, logging.DEBUG, "", 0, "", None, None)
            extra: dict[str, Any] = {"metadata": {"str": [text, index]}, "payload": None}
            record.__dict__.update(extra)
            handler.handle(record)
