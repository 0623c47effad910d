"""The live kernel's capture (``%load_ext dynamo_lens``): what it adds to a cell's run time.

    .venv/bin/python bench/notebook/bench_capture.py [--rounds 15] [--fresh-rounds 3]
        [--out bench/notebook/RESULTS.md]

One IPython shell, in process (the hooks a Jupyter kernel runs are the same ones: pre- and
post-run-cell, the cell's log, its summary). Per round, each cell runs twice back to back, once
with the capture loaded and once without, the order alternating by round; a cell's time is
``run_cell`` from call to return, hooks and summary included. Cells:

- steady: a compiled MLP, warm, called 200 times (what most cells do: no compile);
- inductor, no graph cache: ``torch._dynamo.reset()``, then the same MLP compiled as users
  compile it (the default backend, inductor) with its FX graph cache off (the process's own
  caches of generated code stay warm: a fast recompile, not a session's first compile);
- inductor, warm: the same with inductor's caches on and warm, as on a notebook's second run;
- eager compile: as inductor, with backend "eager" (Dynamo's trace only: the worst case, where
  the records the capture writes and reads are the largest share of the cell's work);
- eager break: as eager compile, with a graph break in the forward (more records, and a
  finding to read and show).

Then, in fresh processes (``--fresh-rounds`` each way, alternating): the first compile of a
notebook's session, inductor with its caches in an empty folder, timed as that one cell.

Before each timed cell the capture is switched (``%load_ext`` / ``%unload_ext``) and a cell
that collects garbage runs, so that neither what follows a switch nor a collection of the
previous cell's garbage is counted.

The ratio is the median of paired per-round ratios (capture on / off), with its IQR.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import platform
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.common import fmt_ms, machine, paired_ratio, ratio_cell

SETUP = """
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, chatty=False):
        super().__init__()
        self.chatty = chatty
        self.net = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64))

    def forward(self, x):
        if self.chatty:
            print("step", end="")
        return self.net(x)


model = MLP().eval()
warm = torch.compile(model, backend="eager")
x = torch.randn(32, 64)
with torch.no_grad():
    warm(x)
"""

CELLS = {
    "steady": """with torch.no_grad():
    for _ in range(200):
        warm(x)""",
    "inductor, no graph cache": """torch._dynamo.reset()
with torch._inductor.config.patch(fx_graph_cache=False, autotune_local_cache=False):
    fresh = torch.compile(MLP().eval())
    with torch.no_grad():
        for _ in range(20):
            fresh(x)""",
    "inductor, warm": """torch._dynamo.reset()
fresh = torch.compile(MLP().eval())
with torch.no_grad():
    for _ in range(20):
        fresh(x)""",
    "eager compile": """torch._dynamo.reset()
fresh = torch.compile(MLP().eval(), backend="eager")
with torch.no_grad():
    for _ in range(20):
        fresh(x)""",
    "eager break": """torch._dynamo.reset()
fresh = torch.compile(MLP(chatty=True).eval(), backend="eager")
with torch.no_grad():
    for _ in range(20):
        fresh(x)""",
}


# A fresh process's first compile, as a notebook's first run pays it: IPython, the model, and
# one cell that compiles it with inductor, its caches in an empty folder; the cell's seconds.
FIRST = """
import os, sys, tempfile, time
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="dl-bench-inductor-")
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
def run(src):
    result = shell.run_cell(src, store_history=True)
    result.raise_error()
run(sys.argv[1])
if sys.argv[2] == "on":
    run("%load_ext dynamo_lens")
t0 = time.perf_counter()
run(sys.argv[3])
print("SECONDS", time.perf_counter() - t0)
"""


def first_compile(on: bool) -> float:
    cell = CELLS["inductor, warm"]  # the caches are empty: the same cell, cold
    out = subprocess.run(
        [sys.executable, "-c", FIRST, SETUP, "on" if on else "off", cell],
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("SECONDS"))
    return float(line.split()[1])


def _row(name: str, on: list[float], off: list[float]) -> str:
    ratio = paired_ratio(on, off)
    return (
        f"| {name} | {fmt_ms(off)} | {fmt_ms(on)} | {ratio_cell(on, off)} | "
        f"{'yes' if ratio <= 1.05 else 'no'} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--fresh-rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    sink = io.StringIO()

    def run(src: str) -> float:
        sink.seek(0)
        sink.truncate()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            t0 = time.perf_counter()
            result = shell.run_cell(src, store_history=True)
            took = time.perf_counter() - t0
        result.raise_error()
        return took

    def capture(on: bool) -> None:
        run("%load_ext dynamo_lens" if on else "%unload_ext dynamo_lens")
        run("import gc; gc.collect()")

    run(SETUP)
    for src in CELLS.values():  # warm both ways once: first-call costs are not the capture's
        for on in (True, False):
            capture(on)
            run(src)
    times: dict[str, dict[bool, list[float]]] = {c: {True: [], False: []} for c in CELLS}
    # The cells that compile nothing first, apart: inductor's compile workers, busy after a
    # compile, would make them the noisiest measure here.
    for group in (["steady"], [c for c in CELLS if c != "steady"]):
        for r in range(args.rounds):
            for name in group:
                for on in (r % 2 == 0, r % 2 != 0):
                    capture(on)
                    times[name][on].append(run(CELLS[name]))
    capture(False)
    fresh: dict[bool, list[float]] = {True: [], False: []}
    for r in range(args.fresh_rounds):
        for on in (r % 2 == 0, r % 2 != 0):
            fresh[on].append(first_compile(on))

    rows = []
    for name in CELLS:
        on, off = times[name][True], times[name][False]
        rows.append(_row(name, on, off))
    if args.fresh_rounds:
        rows.append(
            _row("a fresh kernel's first compile (inductor, empty caches)", *fresh.values())
        )
    import torch

    report = "\n".join(
        [
            "# The live kernel's capture: overhead on a cell's run time",
            "",
            f"Measured {datetime.date.today()} on {machine()}, torch {torch.__version__}, "
            f"Python {platform.python_version()}, {args.rounds} rounds in one shell and "
            f"{args.fresh_rounds} fresh kernels each way:",
            "`.venv/bin/python bench/notebook/bench_capture.py"
            + f" --rounds {args.rounds} --fresh-rounds {args.fresh_rounds}`",
            "",
            "| cell | capture off, ms median (IQR) | capture on | on / off, paired | "
            "≤ 1.05 (median) |",
            "| --- | --- | --- | --- | --- |",
            *rows,
            "",
            (__doc__ or "").split("\n\n", 2)[2].strip(),
        ]
    )
    print(report)
    if args.out:
        args.out.write_text(report + "\n")


if __name__ == "__main__":
    main()
