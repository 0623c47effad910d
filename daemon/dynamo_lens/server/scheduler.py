"""Which analysis runs next: one job per file, newest request wins, bursts debounced.

A request for a file that is already queued replaces the queued one; a request for a file that
is being analysed cancels that run. So a burst of saves shows the last version, and at most one
earlier analysis (the one the first save of a quiet file starts at once) gets to finish before
it. Knows nothing of LSP or torch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..engine.cancel import CancelToken

log = logging.getLogger(__name__)


@dataclass
class Job:
    path: str
    version: int
    checks: list[str]
    reason: str
    due: float
    token: CancelToken = field(default_factory=CancelToken)
    # How often this request has been put back (a save whose bytes were not yet on disk).
    attempt: int = 0


class Scheduler:
    def __init__(
        self,
        run: Callable[[Job], None],
        *,
        concurrency: int = 1,
        debounce: float = 0.3,
        on_change: Callable[[int], None] | None = None,
        on_error: Callable[[Job, BaseException], None] | None = None,
    ) -> None:
        self._run = run
        self._on_error = on_error
        self._debounce = debounce
        self._on_change = on_change or (lambda _n: None)
        self._pending: dict[str, Job] = {}
        self._running: dict[str, Job] = {}
        self._cv = threading.Condition()
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="analysis")
        self._slots = concurrency
        self._closed = False
        threading.Thread(target=self._dispatch, name="scheduler", daemon=True).start()

    def submit(
        self,
        path: str,
        version: int,
        checks: list[str],
        reason: str,
        *,
        delay: float | None = None,
    ) -> Job:
        wait = self._debounce if delay is None else delay
        job = Job(path, version, checks, reason, time.monotonic() + wait)
        with self._cv:
            self._pending[path] = job
            running = self._running.get(path)
            if running is not None:
                running.token.cancel()
            self._cv.notify_all()
        self._on_change(self.count())
        return job

    def retry(self, job: Job, delay: float) -> bool:
        """Put ``job`` back to run again after ``delay`` seconds, unless a newer request for
        its file has come in meanwhile (that one wins, as always)."""
        with self._cv:
            if job.path in self._pending:
                return False
            self._pending[job.path] = Job(
                job.path,
                job.version,
                job.checks,
                job.reason,
                time.monotonic() + delay,
                attempt=job.attempt + 1,
            )
            self._cv.notify_all()
        self._on_change(self.count())
        return True

    def cancel(self, path: str) -> None:
        with self._cv:
            self._pending.pop(path, None)
            running = self._running.get(path)
            if running is not None:
                running.token.cancel()
        self._on_change(self.count())

    def has_pending(self, path: str) -> bool:
        with self._cv:
            return path in self._pending

    def active(self, path: str) -> bool:
        """Whether a job for ``path`` is queued or running."""
        with self._cv:
            return path in self._pending or path in self._running

    def count(self) -> int:
        with self._cv:
            return len(self._pending) + len(self._running)

    def _dispatch(self) -> None:
        while True:
            with self._cv:
                while True:
                    if self._closed:
                        return
                    now = time.monotonic()
                    ready = [
                        j
                        for j in self._pending.values()
                        if j.due <= now and j.path not in self._running
                    ]
                    if ready and self._slots > 0:
                        job = min(ready, key=lambda j: j.due)
                        del self._pending[job.path]
                        self._running[job.path] = job
                        self._slots -= 1
                        break
                    waits = [j.due - now for j in self._pending.values() if j.due > now]
                    self._cv.wait(timeout=min(waits) if waits else None)
            self._pool.submit(self._execute, job)

    def _execute(self, job: Job) -> None:
        try:
            if not job.token.cancelled:
                self._run(job)
        except BaseException as exc:
            # A thread pool keeps a failure in a future nobody reads: say it, never lose it.
            log.exception("analysis of %s failed", job.path)
            if self._on_error is not None:
                self._on_error(job, exc)
        finally:
            with self._cv:
                if self._running.get(job.path) is job:
                    del self._running[job.path]
                self._slots += 1
                self._cv.notify_all()
            self._on_change(self.count())

    def close(self) -> None:
        with self._cv:
            self._closed = True
            for j in self._running.values():
                j.token.cancel()
            self._pending.clear()
            self._cv.notify_all()
        self._pool.shutdown(wait=False, cancel_futures=True)
