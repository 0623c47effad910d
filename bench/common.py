"""What the benchmarks share: the floor they compare against, and paired-ratio statistics.

The floor is what torch alone costs for the same work: a warm process that imports a file
fresh, calls its ``compile_example*`` and runs ``torch._dynamo.explain`` on each target. Every
"× of the floor" figure in ``bench/`` divides by it, measured side by side in the same run.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

FLOOR_SRC = (
    f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
    + r'''
import importlib.util, os, re, sys, time
import torch
from torch import nn

from bench.oracle import example_calls, example_functions, import_fresh


def _guess(mod):
    """The engine's zero-config guess, for argument-free modules whose first layer is Linear."""
    out = []
    for obj in list(vars(mod).values()):
        if isinstance(obj, type) and issubclass(obj, nn.Module) and obj.__module__ == mod.__name__:
            try:
                model = obj()
            except TypeError:
                continue
            leaves = [m for m in model.modules() if m is not model and not list(m.children())]
            leaf = leaves[0] if leaves else None
            if isinstance(leaf, nn.Linear):
                out.append((model, (torch.randn(2, leaf.in_features),), {}))
    return out


def _targets(mod):
    """Distinct callables of each compile_example*, each with its first call (as the engine)."""
    examples = example_functions(mod, own=True)
    if not examples:
        return _guess(mod)
    out = []
    for ex in examples:
        seen = set()
        for fn, args, kwargs in example_calls(ex()):
            if id(fn) not in seen:
                seen.add(id(fn))
                out.append((fn, args, kwargs))
    return out


def run_file(root, path, capture=None):
    t0 = time.perf_counter()
    mod = import_fresh(root, path)
    t1 = time.perf_counter()
    targets = _targets(mod)
    t2 = time.perf_counter()
    graphs = breaks = 0
    for fn, args, kwargs in targets:
        torch._dynamo.reset()
        if capture is None:
            out = torch._dynamo.explain(fn)(*args, **kwargs)
        else:
            with capture():
                out = torch._dynamo.explain(fn)(*args, **kwargs)
        graphs += out.graph_count
        breaks += out.graph_break_count
    t3 = time.perf_counter()
    return {"total": t3 - t0, "import": t1 - t0, "examples": t2 - t1, "explain": t3 - t2,
            "targets": len(targets), "graphs": graphs, "breaks": breaks}
'''
)


_FLOOR_SERVER = (
    FLOOR_SRC
    + r"""
import json
proto = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)  # the model's prints go to stderr, never into the answers
sys.stdout = sys.stderr
for line in sys.stdin:
    req = json.loads(line)
    proto.write(json.dumps(run_file(req["root"], req["path"])) + "\n")
"""
)


class WarmProcess:
    """A warm Python process serving JSON requests a line at a time (its source reads stdin and
    answers on the protocol fd): side-by-side timings without start-up in the figures."""

    def __init__(self, source: str, *args: str, cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", source, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=str(cwd) if cwd else None,
        )

    def request(self, req: dict[str, Any]) -> Any:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the warm process died")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


class Floor(WarmProcess):
    """A warm floor process: ``run(root, path)`` times one file, as the daemon would see it."""

    def __init__(self, cwd: Path) -> None:
        super().__init__(_FLOOR_SERVER, cwd=cwd)

    def run(self, root: Path, path: Path) -> dict[str, Any]:
        return dict(self.request({"root": str(root), "path": str(path)}))


def machine() -> str:
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"nproc={os.cpu_count()}, load average {load}"


# ------------------------------------------------------------------------------------ stats
def q(xs: list[float]) -> tuple[float, float, float]:
    """(q1, median, q3), inclusive quartiles."""
    if len(xs) == 1:
        return xs[0], xs[0], xs[0]
    q1, med, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return q1, med, q3


def fmt_ms(xs: list[float]) -> str:
    q1, med, q3 = q(xs)
    return f"{med * 1e3:.0f} ({q1 * 1e3:.0f}–{q3 * 1e3:.0f})"


def ratio_cell(num: list[float], den: list[float]) -> str:
    """Median [IQR] of the paired per-round ratios: both variants of a pair ran back to back,
    so the machine's load drifting between rounds cancels out of each ratio."""
    return f"{paired_ratio(num, den):.2f}× [{'–'.join(f'{x:.2f}' for x in q_ratio(num, den)[::2])}]"


def q_ratio(num: list[float], den: list[float]) -> tuple[float, float, float]:
    return q([a / b for a, b in zip(num, den, strict=True)])


def paired_ratio(num: list[float], den: list[float]) -> float:
    return q_ratio(num, den)[1]


def diff_cell(a: list[float], b: list[float]) -> tuple[float, str]:
    q1, med, q3 = q([x - y for x, y in zip(a, b, strict=True)])
    return med, f"{med * 1e3:+.0f} [{q1 * 1e3:+.0f} … {q3 * 1e3:+.0f}]"


# Process memory, from /proc: what a benchmark's parent and its workers hold.
def rss_kb(pid: int | str = "self") -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


def descendants(pid: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in kids.get(p, []):
            out.append(c)
            todo.append(c)
    return out
