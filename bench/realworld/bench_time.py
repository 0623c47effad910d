"""Time of a breaks+recompiles check against torch's own eager-backend run of the same calls.

Side by side, in paired rounds on one machine: a warm engine's ``analyze_file(example,
["breaks", "recompiles"])`` against a warm torch-only process that imports the same file fresh
and makes the same calls with nothing of ours loaded: ``torch._dynamo.explain`` on each target's
first call, then the declared variants through one ``torch.compile(backend="eager")``, or for a
single call the probe families (one dim or number changed at a time, each from a fresh Dynamo,
each probe checked in eager first, as the engine does). Goal: ≤ 1.3×.

    .venv/bin/python bench/realworld/bench_time.py [--rounds 5] [--out bench/realworld/TIME.md]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from dynamo_lens.config import load  # noqa: E402
from dynamo_lens.engine.analysis import Engine  # noqa: E402

from bench.common import WarmProcess, machine, q, ratio_cell  # noqa: E402
from bench.corpora.realworld import CASES  # noqa: E402
from bench.realworld.score import available, build  # noqa: E402

DEFAULT_CASES = [
    "gpt2-seq-lengths",
    "bert-mask-or-none",
    "x-transformers-lengths",
    "local-attention",
    "torch-transformer-encoder",
    "rotary-embedding",
]

TORCH_ONLY = r"""
import importlib, json, os, re, sys, time
import torch
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[1])))
import groundtruth as gt  # its call discipline (grad as the target trains, probe families)

ROOTS = []

def run(root):
    # Every case's file is example.py: forget the last one, and the last case's folder.
    for name in list(sys.modules):
        f = getattr(sys.modules[name], "__file__", None) or ""
        if any(f.startswith(r) for r in ROOTS + [root]):
            del sys.modules[name]
    for r in ROOTS:
        while r in sys.path:
            sys.path.remove(r)
    ROOTS[:] = [root]
    sys.path.insert(0, root)
    t0 = time.perf_counter()
    mod = importlib.import_module("example")
    for name in sorted(n for n in vars(mod) if re.fullmatch(r"compile_example(_\w+)?", n)):
        result = getattr(mod, name)()
        items = result if isinstance(result, list) else [result]
        groups = {}
        for item in items:
            fn, args, kwargs = gt._call_parts(item)
            groups.setdefault(id(fn), (fn, []))[1].append((args, kwargs))
        for fn, calls in groups.values():
            grad = gt._trains(fn, *calls[0])
            torch._dynamo.reset()
            with torch.random.fork_rng(devices=[]), torch.set_grad_enabled(grad):
                torch.manual_seed(0)
                torch._dynamo.explain(fn)(*calls[0][0], **calls[0][1])
            fams = [calls] if len(calls) >= 2 else [
                [calls[0], *[c for c in fam if gt._valid(fn, *c, grad)]]
                for fam in gt._families(*calls[0])
            ]
            for fam in fams:
                if len(fam) < 2:
                    continue
                torch._dynamo.reset()
                compiled = torch.compile(fn, backend="eager")
                for args, kwargs in fam:
                    try:
                        with torch.random.fork_rng(devices=[]), torch.set_grad_enabled(grad):
                            torch.manual_seed(0)
                            compiled(*args, **kwargs)
                    except Exception:
                        break
    return time.perf_counter() - t0

proto = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr
for line in sys.stdin:
    proto.write(json.dumps(run(json.loads(line)["root"])) + "\n")
"""


class TorchOnly(WarmProcess):
    def __init__(self) -> None:
        super().__init__(TORCH_ONLY, str(HERE / "groundtruth.py"))

    def run(self, root: Path) -> float:
        return float(self.request({"root": str(root)}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cases", nargs="*", default=DEFAULT_CASES)
    ap.add_argument("--out", type=Path, default=HERE / "TIME.md")
    ap.add_argument("--work", type=Path, default=REPO / "out" / "realworld-time")
    args = ap.parse_args()
    cases = [c for c in CASES if c.name in args.cases and available(c)]
    spaces = {c.name: build(c, args.work) for c in cases}
    ours: dict[str, list[float]] = {c.name: [] for c in cases}
    theirs: dict[str, list[float]] = {c.name: [] for c in cases}
    floor = TorchOnly()
    engines = {}
    try:
        for name, ws in spaces.items():
            cfg, _ = load(ws, {"backend": "eager"})
            engines[name] = Engine(ws, cfg)
            engines[name].start()
            # Warm both sides once (imports, first compiles) before any round counts.
            engines[name].analyze_file(ws / "example.py", ["breaks", "recompiles"])
            floor.run(ws)
        for r in range(args.rounds):
            for name, ws in spaces.items():
                for side in ("torch", "ours") if r % 2 == 0 else ("ours", "torch"):
                    if side == "torch":
                        theirs[name].append(floor.run(ws))
                    else:
                        t0 = time.perf_counter()
                        engines[name].analyze_file(ws / "example.py", ["breaks", "recompiles"])
                        ours[name].append(time.perf_counter() - t0)
            print(f"round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
    finally:
        floor.close()
        for e in engines.values():
            e.close()
    rows = [
        "# Breaks+recompiles check time vs torch's own eager-backend run of the same calls",
        "",
        f"`.venv/bin/python bench/realworld/bench_time.py --rounds {args.rounds}` on "
        f"{machine()}. Each round runs both sides back to back (order alternating); the ratio "
        "is the median [IQR] of the per-round ratios. Both sides warm. Goal ≤ 1.3×.",
        "",
        "| case | torch alone, s (median) | ours, s (median) | ratio |",
        "|---|---|---|---|",
    ]
    all_ours: list[float] = []
    all_theirs: list[float] = []
    for name in spaces:
        rows.append(
            f"| {name} | {q(theirs[name])[1]:.2f} | {q(ours[name])[1]:.2f} | "
            f"{ratio_cell(ours[name], theirs[name])} |"
        )
        all_ours += ours[name]
        all_theirs += theirs[name]
    rows.append(f"| **all** | | | **{ratio_cell(all_ours, all_theirs)}** |")
    args.out.write_text("\n".join(rows) + "\n")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
