"""``dynamo-lens run`` and ``trace``, and the editor's "Run File with Analysis": run a command
with torch's structured trace on, then read the trace back into findings."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..texts.locate import Workspace
from .extract import RunReader
from .loaded import LoadedRun
from .paths import PathMap
from .tracelog import ReadStats, read


def display(cmd: list[str], root: Path) -> str:
    """The command as the user would type it: the interpreter by name, workspace paths
    relative (``python train.py``, not two absolute paths)."""
    out = []
    for i, arg in enumerate(cmd):
        p = Path(arg)
        if i == 0 and p.is_absolute():
            arg = p.name
        elif p.is_absolute():
            try:
                arg = p.relative_to(root).as_posix()
            except ValueError:
                pass
        out.append(arg)
    return shlex.join(out)


_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_VERSION = re.compile(r"^\d+\.\d+[\w.+-]{0,40}$")
# torch/version.py holds the full version (2.8.0+cu128), without importing torch (seconds).
_ASK_TORCH = (
    "import importlib.util, os, re\n"
    "spec = importlib.util.find_spec('torch')\n"
    "text = open(os.path.join(spec.submodule_search_locations[0], 'version.py')).read()\n"
    "print(re.search(r'__version__\\s*=\\s*[\"\\']([^\"\\']+)', text).group(1))"
)

# After the command itself has exited: how long its output may still drain, and how long the
# rest of its process group gets between SIGTERM and SIGKILL.
_DRAIN = 1.0
_GRACE = 3.0


class TracedRun:
    """The user's command as it is, with ``TORCH_TRACE`` set in its environment: it reaches
    subprocesses and every rank of a torchrun. Output passes through, or, with ``on_line``,
    goes line by line to it (the daemon's stdout is the LSP channel).

    With ``on_line`` (the editor's runs) the command runs in a process group of its own: a
    cancel stops all of it (torchrun's ranks too), and so does the command's own end, since
    what it left running in the background is part of the run. The run is over when the
    command exits, not when every holder of its output pipe has closed it (a child in a
    session of its own could hold it for ever)."""

    def __init__(
        self,
        cmd: list[str],
        root: Path,
        *,
        on_line: Callable[[str], None] | None = None,
        trace_dir: Path | None = None,
    ) -> None:
        self.cmd = cmd
        self.trace_dir = trace_dir or Path(tempfile.mkdtemp(prefix="dynamo-lens-run-"))
        self.started = time.strftime("%H:%M")
        self.provenance = f'run "{display(cmd, root)}" at {self.started}'
        self.cancelled = False
        self._on_line = on_line
        self._root = root
        self._proc: subprocess.Popen[str] | None = None
        self._pgid: int | None = None
        self._done = threading.Event()

    def wait(self) -> int:
        """The command's exit status (127: it could not be started; -N: killed by signal N)."""
        env = {**os.environ, "TORCH_TRACE": str(self.trace_dir), "PYTHONUNBUFFERED": "1"}
        capture = self._on_line is not None
        try:
            self._proc = subprocess.Popen(
                self.cmd,
                cwd=str(self._root),
                env=env,
                stdin=subprocess.DEVNULL if capture else None,
                stdout=subprocess.PIPE if capture else None,
                stderr=subprocess.STDOUT if capture else None,
                text=True,
                errors="replace",
                start_new_session=capture,
            )
        except OSError as exc:
            message = f"dynamo-lens: cannot run {self.cmd[0]}: {exc}"
            if self._on_line:
                self._on_line(message)
            else:
                print(message)
            return 127
        if not capture:
            return self._proc.wait()
        self._pgid = self._proc.pid  # a new session: its leader's pid is the group's id
        if self.cancelled:  # cancelled while it was starting
            self._signal(signal.SIGKILL)
        pump = threading.Thread(target=self._pump, name="run-output", daemon=True)
        pump.start()
        code = self._proc.wait()
        pump.join(_DRAIN)
        self._done.set()
        self._stop_group()
        return code

    def _pump(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None and self._on_line is not None
        try:
            for line in proc.stdout:
                if self._done.is_set():
                    return  # the run is over; a straggler's output is not its output
                self._on_line(line.rstrip("\n"))
        except (OSError, ValueError):
            pass

    def _signal(self, sig: int) -> None:
        if self._pgid is None:
            return
        try:
            os.killpg(self._pgid, sig)
        except OSError:
            pass  # the group is gone already

    def _stop_group(self, grace: float = _GRACE) -> None:
        """SIGTERM to the command's process group, SIGKILL after ``grace`` seconds: whether
        or not its leader still runs (a background child keeps the group alive)."""
        self._signal(signal.SIGTERM)
        if grace <= 0:
            self._signal(signal.SIGKILL)
            return
        timer = threading.Timer(grace, self._signal, (signal.SIGKILL,))
        timer.daemon = True
        timer.start()

    def cancel(self, grace: float = _GRACE) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL after ``grace`` seconds."""
        self.cancelled = True
        self._stop_group(grace)

    def torch_version(self) -> str:
        """The torch the command ran on, asked of its interpreter (the command itself, or the
        one its script's ``#!`` line names), for traces that do not record it (torch 2.8).
        Read from torch's version file: torch is not imported."""
        exe = shutil.which(self.cmd[0], path=os.environ.get("PATH")) if self.cmd else None
        if exe is None:
            return ""
        if not _PYTHON.match(os.path.basename(exe)):
            try:
                with open(exe, "rb") as fh:
                    first = fh.readline(512).decode(errors="replace")
            except OSError:
                return ""
            shebang = shlex.split(first[2:]) if first.startswith("#!") else []
            if shebang and os.path.basename(shebang[0]) == "env" and len(shebang) > 1:
                shebang = [shutil.which(shebang[1]) or shebang[1]]
            if not shebang or not _PYTHON.match(os.path.basename(shebang[0])):
                return ""
            exe = shebang[0]
        try:
            out = subprocess.run(
                [exe, "-c", _ASK_TORCH],
                capture_output=True,
                text=True,
                timeout=30,
                cwd=str(self._root),
                stdin=subprocess.DEVNULL,
            )
        except (OSError, ValueError, subprocess.SubprocessError):
            return ""
        version = out.stdout.strip()
        return version if out.returncode == 0 and _VERSION.match(version) else ""

    def kill(self) -> None:
        """Stop it at once and forget its trace (the daemon is leaving)."""
        self.cancel(grace=0)
        shutil.rmtree(self.trace_dir, ignore_errors=True)


def trace_results(
    paths: list[Path], root: Path, maps: list[tuple[str, str]], provenance: str
) -> LoadedRun:
    """The run that the trace logs under ``paths`` record, as the CLI reports it and the
    editor keeps it (who ran it and how it ended are the caller's to add)."""
    ws = Workspace(root)
    stats = ReadStats()
    reader = RunReader(ws, PathMap(ws, maps), provenance)
    reader.feed(read(paths, stats))
    for _ in range(reader.unreadable):
        stats.skip("a record", "of a shape no known torch writes")
    return LoadedRun(
        provenance=provenance,
        loaded_at=time.time(),
        results=reader.results(),
        summary=reader.summary(),
        torch=reader.torch_version,
        dynamo_seconds=reader.dynamo_seconds,
        inductor_seconds=reader.inductor_seconds,
        frames_compiled=reader.frames_compiled,
        records=stats.records,
        skipped=stats.skipped_count,
        files=stats.files,
        outside=reader.outside,
    )


def report_environment(run: LoadedRun, exit_code: int | None) -> dict[str, object]:
    """The JSON report's ``environment`` for a run: what ran, on which torch, how it ended,
    how much trace was read, and the distinct-break summary."""
    return {
        "run": run.provenance,
        "torch": run.torch or None,
        "exit_code": exit_code,
        "trace_files": run.files,
        "trace_records": run.records,
        "outside_workspace": run.outside,
        "summary": [vars(r) for r in run.summary],
    }


def _where(path: str, root: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path


def summary_text(run: LoadedRun, root: Path) -> str:
    """The distinct-break table, costliest first, then each compiled function, for the text
    report."""
    out = []
    rows = run.summary
    if rows:
        out.append(f"Distinct graph breaks ({len(rows)}), costliest first (compile time lost):")
    for r in rows:
        ranks = f", {r.ranks}" if r.ranks else ""
        out.append(
            f"  {_where(r.path, root)}:{r.line} {r.gb_id or '-'} {r.what}: {r.count}× in "
            f"{r.frames} frame(s){ranks}, {r.compile_seconds:.2f} s"
        )
    reports = run.functions()
    if reports:
        out.append(
            f"Compiled functions ({len(reports)}), costliest first; compile time: Dynamo "
            f"{run.dynamo_seconds:.2f} s, Inductor {run.inductor_seconds:.2f} s, "
            f"{run.frames_compiled} frame compilation(s), torch {run.torch or 'not recorded'}:"
        )
    for rep in reports:
        e = rep.environment
        ranks = f", {e['ranks']}" if e.get("ranks") else ""
        restarts = f", {len(e['restarts'])} restart(s)" if e.get("restarts") else ""
        cache = "".join(f", {n} {k.replace('_', ' ')}" for k, n in (e.get("cache") or {}).items())
        out.append(
            f"  {e['compile_seconds']:.2f} s (Dynamo {e['dynamo_seconds']:.2f} s, Inductor "
            f"{e['inductor_seconds']:.2f} s) {_where(rep.path, root)}:{rep.line} "
            f"{rep.target.rsplit('::', 1)[-1]}: {rep.graph_count} graph(s), "
            f"{rep.break_count} break(s), {rep.recompile_count} recompile(s), "
            f"{e['guards']} guard(s){restarts}{cache}{ranks}"
        )
    return "\n".join(out)
