"""Cost of static hints inside the daemon's didChange path.

Measures, on the example workspace's model files, the two parts of a keystroke in the daemon
(``AnalysisService`` in Restricted Mode, so no worker starts): the synchronous ``change()``
handler (recording the text, arming the static pass's 0.1 s debounce) and the debounced static
pass (``Hints.compute``: ``analyze_source`` + ``Reconciler.visible``) that follows. Medians and
IQR over repeats, one edit per repeat (a comment appended to a different line each time).

    .venv/bin/python bench/static/didchange.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from dynamo_lens.config import Config
from dynamo_lens.server.service import AnalysisService

ROOT = Path(__file__).resolve().parents[2] / "example_workspace"


def quantiles(xs: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(xs, n=4)
    return statistics.median(xs), q[0], q[2]


def main() -> int:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    svc = AnalysisService(
        ROOT,
        Config(),
        trusted=False,
        publish=lambda *a: None,
        status=lambda *a: None,
        log=lambda *a: None,
    )
    rows = []
    for path in sorted((ROOT / "models").glob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        svc.open(str(path), text, 1)
        doc = svc.docs.get(str(path))
        handler, static = [], []
        for i in range(repeats):
            k = i % len(lines)
            edited = "\n".join([*lines[:k], lines[k] + f"  # edit {i}", *lines[k + 1 :]]) + "\n"
            t0 = time.perf_counter()
            svc.change(str(path), edited, i + 2)
            t1 = time.perf_counter()
            svc.hints.compute(doc)
            t2 = time.perf_counter()
            handler.append((t1 - t0) * 1e3)
            static.append((t2 - t1) * 1e3)
        h, s = quantiles(handler), quantiles(static)
        rows.append((path.name, len(lines), h, s))
    svc.close()
    print("| file | lines | change() handler ms, median (IQR) | static pass ms, median (IQR) |")
    print("|---|---:|---|---|")
    for name, n, h, s in rows:
        hs = f"{h[0]:.3f} ({h[1]:.3f}–{h[2]:.3f})"
        ss = f"{s[0]:.2f} ({s[1]:.2f}–{s[2]:.2f})"
        print(f"| {name} | {n} | {hs} | {ss} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
