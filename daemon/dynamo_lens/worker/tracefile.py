"""torch's structured trace written to a file from inside this process, in the format
``TORCH_TRACE`` gives (what ``trace`` and tlparse read). For the pytest plugin: by the time a
plugin runs, torch may already be imported, too late for the environment variable."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path


class Tap(logging.Filter):
    """Writes each record of torch's trace logger to our file, then lets the record go on to
    the logger's handlers only when one of them is somebody's own (torch's ``TORCH_TRACE``
    handler, a user's): ``ignored`` names those that only capture (pytest's).

    A filter on the logger rather than a handler beside the others: pytest 9 attaches its
    capture handlers to every logger that does not propagate, torch's trace logger included,
    so a test that fails would print thousands of trace records we alone asked for."""

    def __init__(self, path: Path, ignored: Callable[[logging.Handler], bool]) -> None:
        super().__init__()
        from torch._logging import _internal

        self.path = path
        self.handler = logging.FileHandler(
            path, mode="w", encoding="utf-8", errors="backslashreplace"
        )
        self.handler.setFormatter(_internal.TorchLogsFormatter(trace=True))
        self.ignored = ignored
        self.keep = bool(os.environ.get("TORCH_TRACE"))
        self._level = _internal.trace_log.level
        # torch builds a trace record only while its logger has a handler.
        self.marker = logging.NullHandler()
        self.log = _internal.trace_log

    def filter(self, record: logging.LogRecord) -> bool:
        self.handler.handle(record)
        return any(self._wanted(h) for h in self.log.handlers)

    def _wanted(self, h: logging.Handler) -> bool:
        if h is self.marker or self.ignored(h):
            return False
        # torch's own handler without TORCH_TRACE writes nothing (it removes itself).
        return getattr(h, "root_dir", "") is not None

    def revive(self) -> None:
        """``logging.config.dictConfig`` disables every logger it does not name, torch's trace
        logger too: from the next test on, it records again."""
        self.log.disabled = False

    def drain(self) -> str:
        """Everything written since the last drain; the file starts again empty, so a long
        session's trace takes the disk of one test's at a time. Under the handler's lock:
        compile threads write records too."""
        h = self.handler
        h.acquire()
        try:
            h.flush()
            text = self.path.read_text(encoding="utf-8", errors="replace")
            if h.stream is not None:
                h.stream.seek(0)
                h.stream.truncate()
        finally:
            h.release()
        return text


def start(path: Path, ignored: Callable[[logging.Handler], bool] = lambda h: False) -> Tap:
    """Write torch's structured trace to ``path`` from now on (its own logger and formatter,
    unchanged from torch 2.8 to 2.15)."""
    from torch._logging import _internal

    tap = Tap(path, ignored)
    _internal.trace_log.setLevel(logging.DEBUG)
    _internal.trace_log.addFilter(tap)
    _internal.trace_log.addHandler(tap.marker)
    return tap


def stop(tap: Tap) -> None:
    from torch._logging import _internal

    _internal.trace_log.removeFilter(tap)
    _internal.trace_log.removeHandler(tap.marker)
    if not tap.keep:
        _internal.trace_log.setLevel(tap._level)
    tap.handler.close()
