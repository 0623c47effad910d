"""Files changed on disk by something other than the editor (git checkout, codegen, another
editor): a watchdog observer with excludes, debounced per file. Python files, and the few
others ``also`` names (the baseline)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from .debounce import Debouncer


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.w = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type not in ("modified", "created", "moved"):
            return
        path = getattr(event, "dest_path", None) or event.src_path
        self.w.touched(os.fsdecode(path))


class Watcher:
    def __init__(
        self,
        root: Path,
        excludes: Sequence[str],
        on_change: Callable[[str], None],
        debounce: float = 0.5,
        also: Callable[[str], bool] = lambda _path: False,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self._excludes = set(excludes)
        self._on_change = on_change
        self._also = also
        self._debounce = debounce
        self._debouncer = Debouncer("watcher")
        self._observer = Observer()

    def wanted(self, path: str) -> bool:
        if not path.endswith(".py"):
            return self._also(path)
        try:
            rel = Path(os.path.realpath(path)).relative_to(self.root)
        except ValueError:
            return False
        return not any(p in self._excludes or p.startswith(".") for p in rel.parts[:-1])

    def touched(self, path: str) -> None:
        if not self.wanted(path):
            return
        real = os.path.realpath(path)
        self._debouncer.call(real, self._debounce, lambda: self._fire(real))

    def _fire(self, path: str) -> None:
        if os.path.exists(path):
            self._on_change(path)

    def start(self) -> None:
        self._observer.schedule(_Handler(self), str(self.root), recursive=True)
        self._observer.daemon = True
        self._observer.start()

    def stop(self) -> None:
        self._observer.stop()
        self._debouncer.close()
