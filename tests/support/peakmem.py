"""`dynamo-lens` in a child process, with the peak memory of that child's own address space.

Why not ``ru_maxrss`` (from ``getrusage`` or ``wait4``): Linux carries the forking parent's
high-water mark across ``exec``, for fork and vfork alike, so a child of a pytest that has already
imported torch reports pytest's few hundred MiB as its own. ``VmHWM`` belongs to the address space
``exec`` made."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

_RUNNER = (
    "import sys\n"
    "from dynamo_lens.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
    "sys.stderr.write(f'\\npeak-kib {hwm[0] if hwm else 0}\\n')\n"
    "sys.exit(code)\n"
)


class CliRun(NamedTuple):
    rc: int
    out: str
    err: str  # stderr without the peak line
    peak_mib: float


def cli(
    args: Sequence[str],
    cwd: Path,
    *,
    timeout: float,
    stdin: int | None = subprocess.DEVNULL,
    env: Mapping[str, str] | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> CliRun:
    """Run ``dynamo-lens ARGS``; past ``timeout`` the child is killed, TimeoutExpired raised."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _RUNNER, *args],
        cwd=cwd,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=None if env is None else dict(env),
        preexec_fn=preexec_fn,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    head, _, peak = err.rpartition("\npeak-kib ")
    kib = int(peak) if peak.strip().isdigit() else 0
    return CliRun(proc.returncode, out, head if peak else err, kib / 1024)
