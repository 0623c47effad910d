"""The parent's side of the worker processes: start, watch, time out, cancel, replace.

A worker runs one job at a time. The parent enforces the job's deadline and memory budget; a
worker that hangs, dies or grows past its budget is killed (its whole process group, so
inductor's compile subprocesses go too) and a fresh one starts warming at once.
"""

from __future__ import annotations

import collections
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..wire import END_OF_OUTPUT, Channel, ChannelClosed
from .cancel import CancelToken

LogFn = Callable[[str], None]
ProgressFn = Callable[[dict[str, Any]], None]

_PKG_PARENT = str(Path(__file__).resolve().parents[2])  # the folder that holds dynamo_lens/
_POLL = 0.05
_CANCEL_GRACE = 3.0


class JobCancelled(Exception):
    pass


class JobFailed(Exception):
    """The job broke inside the worker (a bug of ours, not of user code); the worker lives."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('type')}: {error.get('message')}")
        self.error = error


@dataclass
class WorkerDied(Exception):
    reason: str  # "timeout" | "memory" | "crash" | "exit" | "start"
    message: str
    dump: str = ""
    output: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return self.message


# A worker is replaced after this many jobs, or once it has grown this much since it was ready.
MAX_JOBS_PER_WORKER = 500
MAX_GROWTH_MB = 1024

# User output per job: lines beyond this are counted, not logged; longer lines are cut.
LOG_LINES_PER_JOB = 200
_LINE_CAP = 4000

# `python -m` would put the working directory (the user's workspace) first on sys.path, and a
# workspace with its own msgpack.py, inspect.py or dynamo_lens/ would replace the worker's
# modules. `-c` puts it there too; the bootstrap drops it before importing anything.
_BOOT = (
    "import sys; sys.path.pop(0); import runpy; "
    "runpy.run_module('dynamo_lens.worker', run_name='__main__', alter_sys=True)"
)


def _split_bundle(pythonpath: str) -> tuple[list[str], list[str]]:
    """(entries to keep first, entries bundled beside our package)."""
    bundle = os.path.dirname(_PKG_PARENT)
    keep: list[str] = []
    fallback: list[str] = []
    for entry in filter(None, pythonpath.split(os.pathsep)):
        real = os.path.realpath(entry)
        if real == _PKG_PARENT:
            continue
        (fallback if os.path.dirname(real) == bundle else keep).append(entry)
    return keep, fallback


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


def _tree(root: int) -> set[int]:
    """The worker and everything user code started from it: its session (the worker leads
    one) plus descendants by parent pid (a child that called setsid left the session)."""
    parent: dict[int, int] = {}
    session: set[int] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return {root}
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        pid = int(entry)
        parent[pid] = int(fields[1])
        if int(fields[3]) == root:
            session.add(pid)
    out = {root} | session
    grew = True
    while grew:
        kids = {p for p, pp in parent.items() if pp in out and p not in out}
        grew = bool(kids)
        out |= kids
    return out


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class Worker:
    def __init__(
        self,
        python: str,
        cwd: Path,
        *,
        on_log: LogFn | None = None,
        memory_limit_mb: int = 8192,
        env: dict[str, str] | None = None,
    ) -> None:
        self.python = python
        self.cwd = cwd
        self.memory_limit_mb = memory_limit_mb
        self._on_log = on_log or (lambda _line: None)
        self._extra_env = env or {}
        self._events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._output: collections.deque[str] = collections.deque(maxlen=200)
        self._job_output: collections.deque[str] | None = None
        self._job_lines = 0
        self._job_end = threading.Event()  # the job's output read to its end
        self._reader: threading.Thread | None = None
        self.jobs = 0  # jobs completed
        self.start_rss = 0.0  # MB once ready: the baseline for recycling on growth
        self._next_id = 0
        self.environment: dict[str, Any] | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._chan: Channel | None = None
        fd, self._crash_path = tempfile.mkstemp(prefix="dynamo-lens-crash-", suffix=".txt")
        os.close(fd)
        self._ready = threading.Event()
        self._start_error: WorkerDied | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        p_r, c_w = os.pipe()  # worker -> parent
        c_r, p_w = os.pipe()  # parent -> worker
        env = dict(os.environ)
        env.update(self._extra_env)
        own, fallback = _split_bundle(env.get("PYTHONPATH", ""))
        env["PYTHONPATH"] = os.pathsep.join([_PKG_PARENT, *own])
        # Libraries bundled beside our package (the extension's pygls, msgpack, ...) go after
        # the interpreter's own site-packages, so user code and torch import their own copies.
        env["DYNAMO_LENS_FALLBACK_PATH"] = os.pathsep.join(fallback)
        env["DYNAMO_LENS_FDS"] = f"{c_r},{c_w}"
        env["DYNAMO_LENS_CRASH_FILE"] = self._crash_path
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen(
            [self.python, "-c", _BOOT],
            cwd=str(self.cwd),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(c_r, c_w),
            start_new_session=True,
        )
        os.close(c_r)
        os.close(c_w)
        self._chan = Channel(p_r, p_w)
        threading.Thread(target=self._read_events, name="worker-events", daemon=True).start()
        self._reader = threading.Thread(target=self._read_output, name="worker-output", daemon=True)
        self._reader.start()

    def _read_events(self) -> None:
        assert self._chan is not None
        for msg in self._chan:
            if msg.get("ev") == "ready":
                self.environment = msg.get("env") or {}
                if self.proc is not None:
                    self.start_rss = _rss_mb(self.proc.pid)
                self._ready.set()
                continue
            if msg.get("ev") == "fatal":
                err = msg.get("error") or {}
                self._start_error = WorkerDied(
                    "start",
                    f"the worker could not start with {self.python}: "
                    f"{err.get('type')}: {err.get('message')}",
                    err.get("traceback", ""),
                )
                self._ready.set()
                continue
            self._events.put(msg)
        self._events.put(None)
        if not self._ready.is_set():
            self._start_error = self._death("start")
            self._ready.set()

    def _read_output(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            if line == END_OF_OUTPUT:
                self._job_end.set()
                continue
            if len(line) > _LINE_CAP:
                line = f"{line[:_LINE_CAP]}... (truncated, {len(line)} characters)"
            self._output.append(line)
            if self._job_output is not None:
                self._job_output.append(line)  # a bounded deque: the tail is what matters
            self._job_lines += 1
            # User code that prints a million lines must not become a million log messages.
            if self._job_lines <= LOG_LINES_PER_JOB:
                self._on_log(line)

    def wait_ready(self, timeout: float = 300.0) -> dict[str, Any]:
        if not self._ready.wait(timeout):
            self.kill()
            raise WorkerDied("start", f"the worker did not start within {timeout:.0f} s")
        if self._start_error is not None:
            raise self._start_error
        return self.environment or {}

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self, children: set[int] | None = None) -> None:
        if self.proc is None:
            return
        # Everything the worker started dies with it, even children in their own session
        # (found while the worker lives: once it exits they belong to init).
        if children is None:
            children = _tree(self.proc.pid) - {self.proc.pid}
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if self._chan is not None:
            self._chan.close()

    def close(self) -> None:
        children = _tree(self.proc.pid) - {self.proc.pid} if self.alive and self.proc else set()
        if self.alive and self._chan is not None:
            try:
                self._chan.send({"op": "shutdown"})
                assert self.proc is not None
                # Brief: the daemon's exit must finish within a second; SIGKILL follows.
                self.proc.wait(timeout=0.5)
            except (ChannelClosed, subprocess.TimeoutExpired):
                pass
        if self.proc is not None and self.alive:
            children |= _tree(self.proc.pid) - {self.proc.pid}
        self.kill(children)
        try:
            os.unlink(self._crash_path)
        except OSError:
            pass

    # -- jobs ------------------------------------------------------------------------------
    def _crash_dump(self) -> str:
        try:
            return Path(self._crash_path).read_text(errors="replace")
        except OSError:
            return ""

    def _death(self, reason: str, message: str | None = None) -> WorkerDied:
        code = None
        if self.proc is not None:
            try:
                code = self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                # Alive but unusable (an unreadable message, a closed pipe): never reuse it.
                self.kill()
                code = self.proc.wait(timeout=10)
        dump = self._crash_dump()
        if message is None:
            if code is not None and code < 0:
                name = _signal_name(code)
                what = {"SIGSEGV": "segmentation fault", "SIGABRT": "abort", "SIGBUS": "bus error"}
                message = f"the worker crashed ({what.get(name, name)})"
                if name == "SIGKILL":
                    message = "the worker was killed (SIGKILL; the system may be out of memory)"
                reason = "crash"
            elif "os._exit(" in dump:
                called = dump.split("os._exit(", 1)[1].split(")", 1)[0]
                message = f"user code called os._exit({called}) and ended the worker"
                reason = "exit"
            else:
                message = f"the worker exited with code {code}"
                reason = "exit"
        if self._reader is not None:
            self._reader.join(timeout=2)  # the dying job's last lines are still in the pipe
        # This job's output only: the previous file's lines would mislead.
        output = self._output if self._job_output is None else self._job_output
        return WorkerDied(reason, message, dump, list(output)[-40:])

    def run(
        self,
        op: str,
        params: dict[str, Any],
        *,
        timeout: float,
        cancel: CancelToken | None = None,
        on_progress: ProgressFn | None = None,
    ) -> dict[str, Any]:
        self.wait_ready()
        assert self._chan is not None and self.proc is not None
        self._next_id += 1
        job_id = self._next_id
        self._job_output = collections.deque(maxlen=200)
        self._job_lines = 0
        self._job_end.clear()
        try:
            self._chan.send({"op": op, "id": job_id, "params": params})
        except ChannelClosed:
            raise self._death("crash") from None
        deadline = time.monotonic() + timeout
        cancel_sent_at: float | None = None
        next_mem_check = next_tree_scan = 0.0
        tree = {self.proc.pid}
        while True:
            try:
                msg = self._events.get(timeout=_POLL)
            except queue.Empty:
                msg = {}
            if msg is None:
                raise self._death("crash")
            if msg.get("id") == job_id:
                ev = msg.get("ev")
                if ev in ("result", "cancelled", "failed"):
                    # Its output, all of it, before the job counts as done (bounded: a
                    # reader far behind on a loaded machine does not hold the reply).
                    self._job_end.wait(_OUTPUT_GRACE)
                if ev == "result":
                    return dict(msg.get("result") or {})
                if ev == "progress" and on_progress is not None:
                    on_progress(msg)
                elif ev == "cancelled":
                    raise JobCancelled()
                elif ev == "failed":
                    raise JobFailed(msg.get("error") or {})
            now = time.monotonic()
            if cancel is not None and cancel.cancelled:
                if cancel_sent_at is None:
                    cancel_sent_at = now
                    try:
                        os.kill(self.proc.pid, signal.SIGUSR2)
                    except ProcessLookupError:
                        pass
                elif now - cancel_sent_at > _CANCEL_GRACE:
                    # Stuck in C code that never returns to the interpreter: kill it.
                    self.kill()
                    raise JobCancelled()
            if now > deadline:
                self._dump_and_kill()
                self._deliver_rest(job_id, on_progress)
                raise self._death(
                    "timeout", f"timed out after {timeout:.0f} s (the job was stopped)"
                )
            if now >= next_mem_check:
                next_mem_check = now + 0.1
                if now >= next_tree_scan:
                    # A child's memory is the job's too; finding the children scans /proc, so
                    # once a second, not every check.
                    next_tree_scan = now + 1.0
                    tree = _tree(self.proc.pid)
                rss = sum(_rss_mb(p) for p in tree)
                if rss > self.memory_limit_mb:
                    self._dump_and_kill()
                    self._deliver_rest(job_id, on_progress)
                    raise self._death(
                        "memory",
                        f"used {rss:.0f} MB, over the memory limit of {self.memory_limit_mb} MB "
                        "(the job was stopped)",
                    )

    def _deliver_rest(self, job_id: int, on_progress: ProgressFn | None) -> None:
        """A stopped job's progress still queued (its last check's report), to the stream's end."""
        end = time.monotonic() + 2.0  # a child of user code may hold the stream open
        while on_progress is not None:
            try:
                msg = self._events.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                return
            if msg is None:
                return
            if msg.get("id") == job_id and msg.get("ev") == "progress":
                on_progress(msg)

    def _dump_and_kill(self) -> None:
        """Ask faulthandler where the worker is stuck, then kill it."""
        assert self.proc is not None
        before = len(self._crash_dump())
        try:
            os.kill(self.proc.pid, signal.SIGUSR1)
        except ProcessLookupError:
            return
        end = time.monotonic() + 1.0
        while time.monotonic() < end and len(self._crash_dump()) <= before:
            time.sleep(0.02)
        time.sleep(0.05)
        self.kill()

    @property
    def job_output(self) -> list[str]:
        return list(self._job_output or [])

    @property
    def job_lines(self) -> int:
        """Lines the current (or last) job printed, counted beyond what was kept."""
        return self._job_lines


_OUTPUT_GRACE = 10.0  # seconds: how long a reply waits for the reader to reach its output's end


class WorkerPool:
    """``size`` warm workers; a job borrows one. A dead (or retired) one is replaced straight
    away where ``replace_at_once`` (the daemon: the next save should find a warm worker), else
    when the next job or question comes (a command line, a test: a replacement nobody waits
    on would import torch for nothing)."""

    def __init__(
        self,
        python: str,
        cwd: Path,
        size: int = 1,
        *,
        on_log: LogFn | None = None,
        memory_limit_mb: int = 8192,
        on_restart: Callable[[str], None] | None = None,
        replace_at_once: bool = True,
    ) -> None:
        self._python = python
        self._cwd = cwd
        self._replace_at_once = replace_at_once
        self._owed = 0  # replacements not started yet (``replace_at_once`` False)
        self._size = size
        self._on_log = on_log
        self._memory = memory_limit_mb
        self._on_restart = on_restart or (lambda _why: None)
        self._idle: queue.Queue[Worker] = queue.Queue()
        self._all: list[Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        self.restarts = 0

    @property
    def python(self) -> str:
        """The interpreter the workers run: the user's (a notebook's run uses it too)."""
        return self._python

    def _spawn(self) -> Worker:
        w = Worker(self._python, self._cwd, on_log=self._on_log, memory_limit_mb=self._memory)
        w.start()
        with self._lock:
            self._all.append(w)
        return w

    def start(self) -> None:
        for _ in range(self._size):
            self._idle.put(self._spawn())

    def _refill(self) -> None:
        """Start the replacements owed, before a job or a question takes a worker."""
        while True:
            with self._lock:
                if self._closed or not self._owed:
                    return
                self._owed -= 1
            try:
                self._idle.put(self._spawn())
            except BaseException:
                with self._lock:
                    self._owed += 1  # still owed: the next taker tries again
                raise

    def _take(self) -> Worker:
        """An idle worker; one owed while waiting (the last busy one died) is started then."""
        while True:
            self._refill()
            try:
                return self._idle.get(timeout=0.5)
            except queue.Empty:
                continue

    def environment(self, timeout: float = 300.0) -> dict[str, Any]:
        w = self._take()
        try:
            return w.wait_ready(timeout)
        finally:
            self._idle.put(w)

    def run(
        self,
        op: str,
        params: dict[str, Any],
        *,
        timeout: float,
        cancel: CancelToken | None = None,
        on_progress: ProgressFn | None = None,
        on_output: Callable[[list[str], int], None] | None = None,
    ) -> dict[str, Any]:
        w = self._take()
        replaced = False
        try:
            out = w.run(op, params, timeout=timeout, cancel=cancel, on_progress=on_progress)
            w.jobs += 1
            why = self._retire_reason(w, out)
            if why:
                # Replaced after its job, not during: the result stands, the process goes.
                replaced = True
                self.restarts += 1
                self._on_restart(why)
            return out
        except (WorkerDied, JobCancelled) as exc:
            if not w.alive:
                replaced = True
                why = exc.reason if isinstance(exc, WorkerDied) else "cancelled"
                self.restarts += 1
                self._on_restart(why)
            raise
        finally:
            if on_output is not None:
                on_output(w.job_output, w.job_lines)
            if replaced:
                with self._lock:
                    if w in self._all:
                        self._all.remove(w)
                w.close()
                if self._closed:
                    pass
                elif self._replace_at_once:
                    self._idle.put(self._spawn())
                else:
                    with self._lock:
                        self._owed += 1
            else:
                self._idle.put(w)

    def _retire_reason(self, w: Worker, out: dict[str, Any]) -> str | None:
        tainted = out.get("tainted")
        if tainted:
            return "user code changed the process (" + "; ".join(map(str, tainted)) + ")"
        if w.jobs >= MAX_JOBS_PER_WORKER:
            return f"recycled after {w.jobs} jobs"
        if w.proc is not None and w.start_rss:
            grown = _rss_mb(w.proc.pid) - w.start_rss
            if grown > MAX_GROWTH_MB:
                # Leaks add up (~1.4 MB per analysis); the file that finally crosses the memory
                # limit would be blamed for all of them.
                return f"recycled after growing {grown:.0f} MB"
        return None

    def close(self) -> None:
        self._closed = True
        with self._lock:
            workers = list(self._all)
            self._all.clear()
        for w in workers:
            w.close()


def default_python() -> str:
    return sys.executable
