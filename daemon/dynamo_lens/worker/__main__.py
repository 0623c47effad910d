"""Worker process: ``python -m dynamo_lens.worker``. Runs user code; nothing else does.

Before any user code runs, the protocol pipes (passed as inherited fds) are the only way to
the parent; fds 1 and 2 both go to the parent's log pipe, so whatever user code prints, from
Python or C, never touches the protocol. faulthandler writes a traceback to a crash file on a
fatal signal, on SIGUSR1 (sent by the parent before it kills a hung job) and on ``os._exit``.
SIGUSR2 cancels the running job.
"""

from __future__ import annotations

import faulthandler
import functools
import gc
import os
import signal
import sys
import traceback
from types import FrameType
from typing import Any

# Libraries bundled with the extension come after the interpreter's own (msgpack may be only
# there); this must run before the protocol module imports msgpack.
for _entry in filter(None, os.environ.pop("DYNAMO_LENS_FALLBACK_PATH", "").split(os.pathsep)):
    if _entry not in sys.path:
        sys.path.append(_entry)

from ..texts.errors import safe_str  # noqa: E402
from ..wire import END_OF_OUTPUT, Channel, ChannelClosed  # noqa: E402
from .cancel import Cancelled  # noqa: E402

_in_job = False
# A cancel that arrives while a progress message is being written waits for its end: raised
# halfway through, it would leave half a message on the channel (a report is several KB).
_sending = False
_cancel_pending = False


def _on_cancel(signum: int, frame: FrameType | None) -> None:
    global _cancel_pending
    if _in_job:
        if _sending:
            _cancel_pending = True
            return
        raise Cancelled()


def _isolate_stdio() -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = os.fdopen(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)


def _install_crash_reporting(path: str) -> Any:
    crash = open(path, "w+b", buffering=0)  # noqa: SIM115 - lives as long as the process
    faulthandler.enable(file=crash, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=crash, all_threads=True, chain=False)
    real_exit = os._exit

    def exit_hook(code: int) -> None:  # user code calling os._exit: leave a trace first
        try:
            crash.write(f"os._exit({code}) called\n".encode())
            faulthandler.dump_traceback(file=crash, all_threads=False)
        finally:
            real_exit(code)

    os._exit = exit_hook  # type: ignore[assignment]
    return crash


def _exit_when_orphaned() -> None:
    """If the parent dies while user code hangs, nobody would ever read our pipe: go."""
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os.killpg(os.getpgid(0), signal.SIGKILL)

    threading.Thread(target=watch, name="dynamo-lens-orphan-watch", daemon=True).start()


def _no_core_dumps() -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass


def main() -> int:
    fds = os.environ.pop("DYNAMO_LENS_FDS", "")
    crash_path = os.environ.pop("DYNAMO_LENS_CRASH_FILE", "")
    if not fds:
        print("dynamo_lens.worker is started by the daemon or CLI, not by hand", file=sys.stderr)
        return 2
    rfd, wfd = (int(x) for x in fds.split(","))
    chan = Channel(rfd, wfd)
    _isolate_stdio()
    crash = _install_crash_reporting(crash_path) if crash_path else None
    _exit_when_orphaned()
    _no_core_dumps()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGUSR2, _on_cancel)

    try:
        from . import jobs  # imports torch: the slow part of starting
    except BaseException as exc:
        chan.send({"ev": "fatal", "error": _describe(exc)})
        return 1
    from . import warmmodules

    warmmodules.install()  # workspace modules recorded as they run: kept warm where safe
    # torch's ~2.4k modules and their objects live as long as the worker: moved out of the
    # collector's reach, a full collection in the middle of a job scans only what jobs made
    # (without this, one in every few analyses paid a ~200 ms gen-2 pass). No collect() first:
    # it costs ~160 ms of start-up for the little garbage importing leaves.
    gc.freeze()
    from .taint import Baseline

    baseline = Baseline()  # before any user code: what a job must leave as it found it
    chan.send({"ev": "ready", "env": jobs.environment(), "pid": os.getpid()})

    global _in_job, _cancel_pending
    while True:
        try:
            msg = chan.recv()
        except ChannelClosed:
            return 0
        op = msg.get("op")
        if op == "shutdown":
            return 0
        job_id = msg.get("id")
        fn = jobs.JOBS.get(str(op))
        if fn is None:
            chan.send(
                {"ev": "failed", "id": job_id, "error": {"type": "UnknownOp", "message": str(op)}}
            )
            continue
        if crash is not None:
            crash.seek(0)
            crash.truncate()

        progress = functools.partial(_send_progress, chan, job_id)
        params = msg.get("params") or {}
        # A job may run from a folder of its own (a notebook, from its folder, as its kernel
        # would): back to where the worker started once it is done.
        cwd = params.get("cwd") if isinstance(params.get("cwd"), str) else None
        if cwd and not os.path.isdir(cwd):
            cwd = None  # gone meanwhile: from the worker's own folder, as any file
        path = list(sys.path)
        try:
            _cancel_pending, _in_job = False, True
            if cwd:
                os.chdir(cwd)
            try:
                result = fn(params, progress)
            finally:
                if cwd:  # its folder and what it put on sys.path go with the job
                    os.chdir(baseline.cwd)
                    sys.path[:] = path
            _in_job = False
            tainted = baseline.changes()
            if tainted:
                # The parent replaces this worker and caches nothing from this job.
                result = {**result, "tainted": tainted}
            _end_output()
            chan.send({"ev": "result", "id": job_id, "result": result})
        except Cancelled:
            _in_job = False
            _end_output()
            chan.send({"ev": "cancelled", "id": job_id})
        except ChannelClosed:
            return 0
        except BaseException as exc:  # the job itself broke: report, stay alive
            _in_job = False
            _end_output()
            chan.send({"ev": "failed", "id": job_id, "error": _describe(exc)})
        finally:
            _in_job = False
            sys.stdout.flush()
            sys.stderr.flush()


def _end_output() -> None:
    """The job's output ends here, on the pipe the parent reads it from."""
    for stream in (sys.stdout, sys.stderr):  # whatever user code left in them
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    try:  # to the descriptor itself: user code may have replaced ``sys.stdout``
        os.write(1, (END_OF_OUTPUT + "\n").encode())
    except OSError:
        pass


def _send_progress(chan: Channel, job_id: Any, **kw: Any) -> None:
    global _sending, _cancel_pending
    _sending = True
    try:
        chan.send({"ev": "progress", "id": job_id, **kw})
    finally:
        _sending = False
    if _cancel_pending:
        _cancel_pending = False
        raise Cancelled()


def _describe(exc: BaseException) -> dict[str, str]:
    return {
        "type": type(exc).__name__,
        "message": safe_str(exc),
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
    }


if __name__ == "__main__":
    sys.exit(main())
