"""The live kernel's capture (``%load_ext dynamo_lens``): what it adds to a cell's run time.

    .venv/bin/python bench/notebook/bench_capture.py [--rounds 15] [--out bench/notebook/RESULTS.md]

One IPython shell, in process (the hooks a Jupyter kernel runs are the same ones: pre- and
post-run-cell, the cell's log, its summary). Per round, each cell runs twice back to back, once
with the capture loaded and once without, the order alternating by round; a cell's time is
``run_cell`` from call to return, hooks and summary included. Cells:

- steady: a compiled MLP, warm, called 200 times (what most cells do: no compile);
- compile: ``torch._dynamo.reset()``, then the same MLP compiled (backend "eager": Dynamo's
  trace only, so the trace records are the largest share of the work they will ever be) and
  called 20 times;
- break: as compile, with a graph break in the forward (more records, and a finding to read
  and show).

The ratio is the median of paired per-round ratios (capture on / off), with its IQR.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import fmt_ms, machine, q_ratio, ratio_cell

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
    "compile": """torch._dynamo.reset()
fresh = torch.compile(MLP().eval(), backend="eager")
with torch.no_grad():
    for _ in range(20):
        fresh(x)""",
    "break": """torch._dynamo.reset()
fresh = torch.compile(MLP(chatty=True).eval(), backend="eager")
with torch.no_grad():
    for _ in range(20):
        fresh(x)""",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
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

    run(SETUP)
    for src in CELLS.values():  # warm both ways once: first-call costs are not the capture's
        for on in (True, False):
            capture(on)
            run(src)
    times: dict[str, dict[bool, list[float]]] = {c: {True: [], False: []} for c in CELLS}
    for r in range(args.rounds):
        for name, src in CELLS.items():
            for on in (r % 2 == 0, r % 2 != 0):
                capture(on)
                times[name][on].append(run(src))
    capture(False)

    rows = []
    for name in CELLS:
        on, off = times[name][True], times[name][False]
        hi = q_ratio(on, off)[2]
        rows.append(
            f"| {name} | {fmt_ms(off)} | {fmt_ms(on)} | {ratio_cell(on, off)} | "
            f"{'yes' if hi <= 1.05 else 'no'} |"
        )
    import torch

    report = "\n".join(
        [
            "# The live kernel's capture: overhead on a cell's run time",
            "",
            f"Measured {datetime.date.today()} on {machine()}, torch {torch.__version__}, "
            f"Python {platform.python_version()}, {args.rounds} rounds:",
            "`.venv/bin/python bench/notebook/bench_capture.py"
            + (f" --rounds {args.rounds}`" if args.rounds != 15 else "`"),
            "",
            "| cell | capture off, ms median (IQR) | capture on | on / off, paired | "
            "≤ 1.05 at the IQR's top |",
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
