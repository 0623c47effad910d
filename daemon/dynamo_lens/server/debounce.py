"""A debouncer: the last call for a key runs once its delay has passed.

One thread serves all of a debouncer's keys, so a checkout that touches thousands of files
schedules thousands of deadlines, not thousands of timer threads. The daemon has two: the file
watcher's (disk events) and the static hints' (edit passes), each keyed by path.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class Debouncer:
    def __init__(self, name: str = "debounce") -> None:
        self._due: dict[str, tuple[float, int, Callable[[], None]]] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._closed = False
        threading.Thread(target=self._loop, name=name, daemon=True).start()

    def call(self, key: str, delay: float, fn: Callable[[], None]) -> None:
        """Run ``fn`` after ``delay`` seconds unless ``key`` is called again before then."""
        with self._cv:
            entry = (time.monotonic() + delay, next(self._seq), fn)
            self._due[key] = entry
            heapq.heappush(self._heap, (entry[0], entry[1], key))
            self._cv.notify()

    def cancel(self, key: str) -> None:
        with self._cv:
            self._due.pop(key, None)

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._due.clear()
            self._cv.notify()

    def _loop(self) -> None:
        while True:
            with self._cv:
                while True:
                    if self._closed:
                        return
                    # Drop heap entries that a later call or a cancel replaced.
                    while (
                        self._heap
                        and self._due.get(self._heap[0][2], (0, -1))[1] != self._heap[0][1]
                    ):
                        heapq.heappop(self._heap)
                    if not self._heap:
                        self._cv.wait()
                        continue
                    when, _, key = self._heap[0]
                    wait = when - time.monotonic()
                    if wait <= 0:
                        heapq.heappop(self._heap)
                        fn = self._due.pop(key)[2]
                        break
                    self._cv.wait(wait)
            try:
                fn()
            except Exception:  # one failing callback must not stop the others
                log.exception("debounced call for %s failed", key)
