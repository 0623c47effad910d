#!/usr/bin/env python
"""cProfile of the worker's breaks jobs (discover_job + analyze_job), in-process, warm.

Companion to bench_breaks.py: shows which Dynamo Lens functions make up the gap between the
worker's jobs and a bare ``explain``.

    .venv/bin/python bench/engine/profile_breaks.py [--rounds 2] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "daemon"))


def trace_events(files: list[str], root: Path) -> None:
    """Which structured-trace events torch builds while TraceCapture listens, and their cost.

    torch evaluates ``metadata_fn`` and ``payload_fn`` of every ``trace_structured`` call as soon
    as the ``torch.__trace`` logger has a handler; TraceCapture keeps only a few event kinds.
    Every module's reference to ``trace_structured`` is wrapped to time those callbacks.
    """
    import collections

    import torch
    import torch._logging._internal as internal
    from dynamo_lens.texts.locate import Workspace
    from dynamo_lens.worker import usercode
    from dynamo_lens.worker.tracecapture import TraceCapture

    orig = internal.trace_structured
    stats: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0])

    def wrapped(name, metadata_fn=dict, *, payload_fn=lambda: None, **kw):  # type: ignore[no-untyped-def]
        if not internal.trace_log.handlers:
            return orig(name, metadata_fn, payload_fn=payload_fn, **kw)
        box: dict[str, object] = {}

        def md():  # type: ignore[no-untyped-def]
            t = time.perf_counter()
            v = metadata_fn()
            box["t"] = time.perf_counter() - t
            box["md"] = v
            return v

        def pl():  # type: ignore[no-untyped-def]
            t = time.perf_counter()
            v = payload_fn()
            box["t"] = float(box.get("t", 0.0)) + time.perf_counter() - t  # type: ignore[arg-type]
            box["n"] = len(v) if isinstance(v, str) else (0 if v is None else len(repr(v)))
            return v

        t0 = time.perf_counter()
        try:
            return orig(name, md, payload_fn=pl, **kw)
        finally:
            key = name
            mdv = box.get("md")
            if name == "artifact" and isinstance(mdv, dict):
                key = f"artifact:{mdv.get('name')}"
            st = stats[key]
            st[0] += 1
            st[1] += time.perf_counter() - t0
            st[2] += int(box.get("n", 0))  # type: ignore[call-overload]

    patched = []
    for mod in list(sys.modules.values()):
        if getattr(mod, "trace_structured", None) is orig:
            mod.trace_structured = wrapped
            patched.append(mod)
    cfg_ws = Workspace(root)
    t_total = 0.0
    try:
        for f in files:
            usercode.purge_workspace_modules(cfg_ws)
            mod = usercode.import_file(Path(f), cfg_ws)
            units = usercode.discover(mod, Path(f), [], True)
            for u in units:
                for tgt in usercode.targets_of(u, mod):
                    torch._dynamo.reset()
                    call = tgt.calls[0]
                    t0 = time.perf_counter()
                    with TraceCapture():
                        torch._dynamo.explain(tgt.fn)(*call.args, **call.kwargs)
                    t_total += time.perf_counter() - t0
    finally:
        for mod in patched:
            mod.trace_structured = orig
    rows = sorted(stats.items(), key=lambda kv: -kv[1][1])
    print(
        f"\n===== structured trace under TraceCapture, one pass over {len(files)} files "
        f"(explain total {t_total * 1e3:.0f} ms; {len(patched)} torch modules patched) ====="
    )
    print(f"{'event':55s} {'count':>6s} {'ms (whole call)':>16s} {'payload chars':>14s}")
    for key, (n, secs, chars) in rows:
        print(f"{key:55s} {n:6d} {secs * 1e3:16.1f} {chars:14d}")
    print(
        f"{'all':55s} {sum(v[0] for v in stats.values()):6d} "
        f"{sum(v[1] for v in stats.values()) * 1e3:16.1f} {sum(v[2] for v in stats.values()):14d}"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--workspace", default=str(REPO / "example_workspace"))
    args = ap.parse_args()

    from dynamo_lens.config import load
    from dynamo_lens.engine.analysis import might_have_targets
    from dynamo_lens.engine.source import iter_python_files
    from dynamo_lens.texts.locate import Workspace
    from dynamo_lens.worker import jobs

    root = Path(os.path.realpath(args.workspace))
    cfg, _ = load(root)
    files = [
        str(p)
        for p in iter_python_files([root], cfg.excludes)
        if might_have_targets(p.read_bytes(), [], cfg.guess_targets)
    ]
    noop = lambda **_k: None  # noqa: E731

    def one_pass() -> None:
        for f in files:
            base = {"root": str(root), "path": f, "config": cfg.to_dict(), "config_targets": []}
            found = jobs.discover_job(dict(base), noop)
            for unit in found["units"]:
                jobs.analyze_job(dict(base, unit=unit, checks=["breaks"]), noop)

    one_pass()  # warm-up
    ws = Workspace(root, cfg.excludes)
    mods = [getattr(m, "__file__", None) for m in list(sys.modules.values())]
    mods = [f for f in mods if f]
    t0 = time.perf_counter()
    for f in mods:
        ws.contains(f)
    per_scan = time.perf_counter() - t0
    print(
        f"sys.modules: {len(sys.modules)} entries, {len(mods)} with __file__; one "
        f"Workspace.contains() scan over them: {per_scan * 1e3:.1f} ms "
        f"(discover_job does two per file: purge_workspace_modules and the imports list)"
    )

    trace_events(files, root)

    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    for _ in range(args.rounds):
        one_pass()
    prof.disable()
    print(
        f"{args.rounds} profiled pass(es) over {len(files)} files: {time.perf_counter() - t0:.2f} s"
    )
    for key in ("cumulative", "tottime"):
        s = io.StringIO()
        st = pstats.Stats(prof, stream=s).sort_stats(key)
        st.print_stats(r"dynamo_lens|posixpath|pathlib|ast\.py|linecache|tokenize", args.top)
        print(f"\n===== by {key} (dynamo_lens, path and AST functions only) =====")
        print(s.getvalue().split("\n", 6)[-1] if key == "tottime" else s.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
