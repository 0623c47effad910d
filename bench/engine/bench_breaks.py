#!/usr/bin/env python
"""Cost of the ``breaks`` check: Dynamo Lens's warm worker against a bare ``explain`` floor.

Variants, measured per file, interleaved (the order rotates every round), ``--rounds`` times:

floor        A warm helper process (torch imported, every file analysed once before timing)
             does what the check fundamentally needs: drop the workspace's modules, import
             the file fresh, call its ``compile_example*`` functions (or build the zero-config
             guess), then ``torch._dynamo.reset(); torch._dynamo.explain(fn)(*args, **kwargs)``
             for every distinct target (first call only, like the engine). Timed inside the
             helper.
floor+trace  The same, with Dynamo Lens's ``TraceCapture`` handler attached around each
             ``explain`` (what the structured trace alone costs). Timed inside the helper.
jobs         The worker's own job functions (``discover_job`` then ``analyze_job`` per unit,
             checks=["breaks"]) called directly in the helper: everything the worker does,
             without the process boundary. Timed inside the helper, with phase timers.
warm         ``Engine.analyze_file(path, ["breaks"])`` on a warm worker (``environment()``
             first, one warm-up analysis per file). Timed in this (parent) process.
naive        ``python -c`` per file: start the interpreter, ``import torch``, then the floor
             code. Timed in this process, around the subprocess.

This process never imports torch, so its RSS is what the engine (parent) costs.

    .venv/bin/python bench/engine/bench_breaks.py --rounds 5
"""

# ruff: noqa: E501 - the Markdown report and the floor source are long lines on purpose
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
from bench.common import (
    FLOOR_SRC,
    descendants,
    diff_cell,
    fmt_ms,
    paired_ratio,
    q_ratio,
    ratio_cell,
    rss_kb,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NOTES = "<!-- Notes by hand from here on: bench_breaks.py keeps them when it rewrites the file. -->"

# The floor, as source text: the helper execs it, and the naive variant runs it with `python -c`.
NAIVE_SRC = FLOOR_SRC + (
    "\nimport json\nr = run_file(sys.argv[1], sys.argv[2])\n"
    "os.write(int(sys.argv[3]), json.dumps(r).encode())\n"
)


# ----------------------------------------------------------------------------------- helper
class _Phases:
    """Wall-time accumulators wrapped around the worker's functions (helper process only)."""

    def __init__(self) -> None:
        self.t: dict[str, float] = {}
        self.n: dict[str, int] = {}

    def wrap(self, owner: Any, attr: str, key: str) -> None:
        fn = getattr(owner, attr)
        t, n = self.t, self.n

        def timed(*a: Any, **k: Any) -> Any:
            s = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                t[key] = t.get(key, 0.0) + time.perf_counter() - s
                n[key] = n.get(key, 0) + 1

        setattr(owner, attr, timed)

    def take(self) -> dict[str, Any]:
        out = {"t": dict(self.t), "n": dict(self.n)}
        self.t.clear()
        self.n.clear()
        return out


def serve(root: str) -> int:
    """Warm helper: one JSON request per stdin line, one JSON answer per line on fd 3's copy."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # user code's prints go to stderr
    sys.stdout = sys.stderr
    ns: dict[str, Any] = {}
    exec(compile(FLOOR_SRC, "<floor>", "exec"), ns)
    run_file = ns["run_file"]

    import msgpack
    from dynamo_lens import config as dl_config
    from dynamo_lens.worker import breaks, jobs, usercode
    from dynamo_lens.worker.tracecapture import TraceCapture

    cfg, _ = dl_config.load(Path(root))
    ph = _Phases()
    ph.wrap(jobs, "purge_workspace_modules", "discover: purge modules")
    ph.wrap(jobs, "import_file", "import_file (discover + analyze)")
    ph.wrap(jobs, "discover", "discover: list units")
    ph.wrap(jobs, "targets_of", "analyze: targets_of (calls compile_example)")
    ph.wrap(jobs, "environment", "analyze: environment()")
    ph.wrap(jobs, "_input_shapes", "analyze: _input_shapes")
    ph.wrap(breaks, "collect_sites", "breaks: collect_sites (frames, AST spans)")
    ph.wrap(breaks, "to_finding", "breaks: to_finding")
    ph.wrap(breaks.torch._dynamo, "reset", "torch._dynamo.reset")
    ph.wrap(TraceCapture, "emit", "TraceCapture.emit (handler body)")
    ph.wrap(breaks, "find_breaks", "breaks: find_breaks total (explain under TraceCapture + sites)")
    noop = lambda **_k: None  # noqa: E731

    def jobs_file(path: str) -> dict[str, Any]:
        base = {"root": root, "path": path, "config": cfg.to_dict(), "config_targets": []}
        ph.take()
        t0 = time.perf_counter()
        found = jobs.discover_job(dict(base), noop)
        t1 = time.perf_counter()
        results = []
        for unit in found["units"]:
            results.append(jobs.analyze_job(dict(base, unit=unit, checks=["breaks"]), noop))
        t2 = time.perf_counter()
        packed = sum(len(msgpack.packb(r, use_bin_type=True)) for r in results)
        t3 = time.perf_counter()
        reports = [r for res in results for r in res["reports"]]
        return {
            "total": t2 - t0,
            "findings": [
                sorted(json.dumps(fd, sort_keys=True) for fd in r["findings"]) for r in reports
            ],
            "discover": t1 - t0,
            "analyze": t2 - t1,
            "msgpack_pack": t3 - t2,
            "msgpack_bytes": packed,
            "units": len(found["units"]),
            "targets": len(reports),
            "breaks": sum(r["break_count"] for r in reports),
            "phases": ph.take(),
        }

    for line in sys.stdin:
        req = json.loads(line)
        op = req["op"]
        if op == "floor":
            res = run_file(root, req["path"])
        elif op == "floor_trace":
            res = run_file(root, req["path"], capture=TraceCapture)
        elif op == "jobs":
            res = jobs_file(req["path"])
        elif op == "rss":
            res = rss_kb()
        else:
            res = {"error": op}
        _ = usercode  # imported so its import cost is not inside any timing
        proto.write(json.dumps(res) + "\n")
    return 0


class Helper:
    def __init__(self, root: Path) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in [str(REPO / "daemon"), env.get("PYTHONPATH", "")] if p
        )
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=str(root),
        )

    def ask(self, op: str, path: str = "") -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"op": op, "path": path}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("helper died")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def naive(root: Path, path: str) -> tuple[float, dict[str, Any]]:
    r, w = os.pipe()
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", NAIVE_SRC, str(root), path, str(w)],
        cwd=str(root),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(w,),
    )
    os.close(w)
    data = b""
    with os.fdopen(r, "rb") as fh:
        data = fh.read()
    rc = proc.wait()
    wall = time.perf_counter() - t0
    if rc != 0:
        raise RuntimeError(f"naive run of {path} exited {rc}")
    return wall, json.loads(data)


# ------------------------------------------------------------------------------------- main
VARIANTS = ("floor", "floor_trace", "jobs", "warm", "naive")
LABELS = {
    "floor": "floor",
    "floor_trace": "floor+trace",
    "jobs": "jobs (in-proc)",
    "warm": "warm worker",
    "naive": "naive",
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workspace", default=str(REPO / "example_workspace"))
    ap.add_argument("--out", default=str(HERE / "RESULTS.md"))
    ap.add_argument("--no-naive", action="store_true", help="skip the naive variant")
    ap.add_argument(
        "--history",
        default=str(HERE / "history.jsonl"),
        help="append this run's totals here and list all runs in the report ('' for none)",
    )
    ap.add_argument("--serve", metavar="ROOT", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        return serve(args.serve)

    t_start = time.monotonic()
    rss_start = rss_kb()
    sys.path.insert(0, str(REPO / "daemon"))
    from dynamo_lens.config import load
    from dynamo_lens.engine.analysis import Engine, might_have_targets
    from dynamo_lens.texts.source import iter_python_files

    root = Path(os.path.realpath(args.workspace))
    cfg, problems = load(root)
    for p in problems:
        print("config:", p, file=sys.stderr)

    helper = Helper(root)
    engine = Engine(root, cfg)
    t0 = time.monotonic()
    env = engine.environment()
    t_env = time.monotonic() - t0
    rss_engine_started = rss_kb()
    worker_pid = engine.pool._all[0].proc.pid  # type: ignore[union-attr]

    variants = [v for v in VARIANTS if not (args.no_naive and v == "naive")]

    # Files and warm-up: one analysis per file in each warm process; keep files with targets.
    files: list[str] = []
    info: dict[str, dict[str, Any]] = {}
    for p in iter_python_files([root], cfg.excludes):
        data = p.read_bytes()
        if not might_have_targets(data, [], cfg.guess_targets):
            continue
        res = engine.analyze_file(p, ["breaks"])
        errors = [f.message for f in res.all_findings() if f.kind.value == "error"]
        if not res.reports:
            print(f"skip {p.relative_to(root)}: no targets {errors}", file=sys.stderr)
            continue
        fl = helper.ask("floor", str(p))
        helper.ask("floor_trace", str(p))
        jb = helper.ask("jobs", str(p))
        files.append(str(p))
        info[str(p)] = {
            "rel": p.relative_to(root).as_posix(),
            "targets": len(res.reports),
            "floor_targets": fl["targets"],
            "engine_breaks": sum(r.break_count for r in res.reports),
            "jobs_breaks": jb["breaks"],
            "explain_breaks": fl["breaks"],
            "errors": errors,
            "findings": jb["findings"],
        }
    t_warm = time.monotonic() - t_start

    rss_worker = rss_kb(worker_pid)
    worker_kids = descendants(worker_pid)
    rss_worker_tree = rss_worker["VmRSS"] + sum(
        rss_kb(k).get("VmRSS", 0) for k in worker_kids if os.path.exists(f"/proc/{k}")
    )
    rss_parent_warm = rss_kb()
    rss_helper_warm = helper.ask("rss")
    samples: dict[str, dict[str, list[float]]] = {v: {f: [] for f in files} for v in VARIANTS}
    extra: dict[str, dict[str, list[dict[str, Any]]]] = {
        v: {f: [] for f in files} for v in VARIANTS
    }
    for rnd in range(args.rounds):
        for fi, f in enumerate(files):
            k = (rnd + fi) % len(variants)
            for v in variants[k:] + variants[:k]:
                if v == "warm":
                    s = time.perf_counter()
                    res = engine.analyze_file(Path(f), ["breaks"])
                    samples[v][f].append(time.perf_counter() - s)
                    extra[v][f].append({"breaks": sum(r.break_count for r in res.reports)})
                elif v == "naive":
                    wall, r = naive(root, f)
                    samples[v][f].append(wall)
                    extra[v][f].append(r)
                else:
                    r = helper.ask(v, f)
                    samples[v][f].append(r["total"])
                    extra[v][f].append(r)
        print(
            f"round {rnd + 1}/{args.rounds} done at {time.monotonic() - t_start:.0f} s",
            file=sys.stderr,
        )

    rss_worker_end = rss_kb(worker_pid)
    rss_parent_end = rss_kb()
    rss_helper_end = helper.ask("rss")
    restarts = engine.pool.restarts
    engine.close()
    helper.close()
    t_total = time.monotonic() - t_start

    # ------------------------------------------------------------------------------ report
    def totals(v: str) -> list[float]:
        n = len(samples[v][files[0]])
        return [sum(samples[v][f][i] for f in files) for i in range(n)]

    lines: list[str] = []
    w = lines.append
    shown = [v for v in VARIANTS if v in variants]
    ratios = [v for v in ("warm", "naive") if v in variants]
    w(
        "| file | targets | "
        + " | ".join(f"{LABELS[v]} ms" for v in shown)
        + " | "
        + " | ".join(f"{v}/floor" for v in ratios)
        + " |"
    )
    w("|---|---|" + "---|" * (len(shown) + len(ratios)))
    for f in files:
        w(
            f"| {info[f]['rel']} | {info[f]['targets']} | "
            + " | ".join(fmt_ms(samples[v][f]) for v in shown)
            + " | "
            + " | ".join(ratio_cell(samples[v][f], samples["floor"][f]) for v in ratios)
            + " |"
        )
    tot = {v: totals(v) for v in variants}
    w(
        f"| **total** | {sum(info[f]['targets'] for f in files)} | "
        + " | ".join(fmt_ms(tot[v]) for v in shown)
        + " | "
        + " | ".join(f"**{ratio_cell(tot[v], tot['floor'])}**" for v in ratios)
        + " |"
    )
    table = "\n".join(lines)

    # Decomposition of the warm - floor gap (medians of per-round totals).
    m = {v: statistics.median(tot[v]) for v in variants}
    chain = [
        ("structured-trace capture (floor+trace − floor)", tot["floor_trace"], tot["floor"]),
        (
            "rest of the worker's job code, in-process (jobs − floor+trace)",
            tot["jobs"],
            tot["floor_trace"],
        ),
        (
            "the worker process, pipes, msgpack, engine parent (warm − jobs)",
            tot["warm"],
            tot["jobs"],
        ),
    ]
    decomp = [
        "| step | ms per round, all files: median [IQR] of the paired per-round differences | share of gap |",
        "|---|---|---|",
    ]
    gap, gap_cell = diff_cell(tot["warm"], tot["floor"])
    for name, a, b in chain:
        d, cell = diff_cell(a, b)
        share = f"{100 * d / gap:.0f} %" if gap > 0 else "–"
        decomp.append(f"| {name} | {cell} | {share} |")
    decomp.append(f"| **warm − floor** | {gap_cell} | |")
    decomp.append("")
    same_all = all(r["findings"] == info[f]["findings"] for f in files for r in extra["jobs"][f])
    decomp.append(
        f"Findings of the in-process jobs identical in the warm-up and every round: {same_all}."
    )

    # Phases inside the jobs variant (median per round, summed over files).
    phase_keys: set[str] = set()
    for f in files:
        for r in extra["jobs"][f]:
            phase_keys |= set(r["phases"]["t"])
    ph_rows = [
        "| phase inside the worker's jobs | ms per round (median) | calls per round |",
        "|---|---|---|",
    ]
    per_round_phase: dict[str, list[float]] = {}
    per_round_calls: dict[str, list[int]] = {}
    n = args.rounds
    for key in sorted(phase_keys):
        per_round_phase[key] = [
            sum(extra["jobs"][f][i]["phases"]["t"].get(key, 0.0) for f in files) for i in range(n)
        ]
        per_round_calls[key] = [
            sum(extra["jobs"][f][i]["phases"]["n"].get(key, 0) for f in files) for i in range(n)
        ]
    for key in sorted(phase_keys, key=lambda k: -statistics.median(per_round_phase[k])):
        ph_rows.append(
            f"| {key} | {statistics.median(per_round_phase[key]) * 1e3:.1f} | {statistics.median(per_round_calls[key]):.0f} |"
        )
    for key in ("discover", "analyze", "msgpack_pack"):
        vals = [sum(extra["jobs"][f][i][key] for f in files) for i in range(n)]
        ph_rows.append(f"| jobs: {key} (whole) | {statistics.median(vals) * 1e3:.1f} | |")
    mp_bytes = sum(extra["jobs"][f][0]["msgpack_bytes"] for f in files)
    ph_rows.append(f"| result size over the pipe (all files) | {mp_bytes / 1024:.1f} KiB | |")
    floor_parts = ["| floor part | ms per round (median) |", "|---|---|"]
    for key in ("import", "examples", "explain"):
        vals = [sum(extra["floor"][f][i][key] for f in files) for i in range(n)]
        floor_parts.append(f"| {key} | {statistics.median(vals) * 1e3:.1f} |")
    if "naive" in variants:
        inner = [sum(extra["naive"][f][i]["total"] for f in files) for i in range(n)]
        floor_parts.append(
            f"| naive: interpreter start + `import torch` (naive wall − its own floor work), all files | "
            f"{statistics.median([a - b for a, b in zip(tot['naive'], inner, strict=True)]) * 1e3:.0f} |"
        )

    cmd = (
        "cd "
        + str(REPO)
        + " && .venv/bin/python "
        + " ".join([str(Path(sys.argv[0]).resolve().relative_to(REPO)), *sys.argv[1:]])
    )
    try:
        import subprocess as sp

        commit = sp.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        commit = "?"
    load_avg = os.getloadavg()
    mib = lambda kb: f"{kb / 1024:.0f} MiB"  # noqa: E731

    sanity = [
        "| file | targets (engine / floor) | breaks: engine findings / jobs / explain graph_break_count |",
        "|---|---|---|",
    ]
    for f in files:
        i = info[f]
        sanity.append(
            f"| {i['rel']} | {i['targets']} / {i['floor_targets']} | {i['engine_breaks']} / {i['jobs_breaks']} / {i['explain_breaks']} |"
        )

    def phase_ms(key: str) -> float:
        return statistics.median(per_round_phase.get(key, [0.0])) * 1e3

    now = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    hist_rows: list[dict[str, Any]] = []
    if args.history:
        hpath = Path(args.history)
        if hpath.exists():
            hist_rows = [json.loads(x) for x in hpath.read_text().splitlines() if x.strip()]
        q1r, medr, q3r = q_ratio(tot["warm"], tot["floor"])
        row = {
            "date": now,
            "commit": commit,
            "rounds": args.rounds,
            "load": round(load_avg[0], 2),
            "floor_ms": round(m["floor"] * 1e3),
            "warm_ms": round(m["warm"] * 1e3),
            "naive_ms": round(m["naive"] * 1e3) if "naive" in m else None,
            "warm_floor": round(medr, 2),
            "warm_floor_iqr": [round(q1r, 2), round(q3r, 2)],
            "naive_floor": round(paired_ratio(tot["naive"], tot["floor"]), 2)
            if "naive" in tot
            else None,
            "note": "",
        }
        hist_rows.append(row)
        with hpath.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
    hist_md = "\n".join(
        [
            "## Run history",
            "",
            f"Every full run appends its totals to `{os.path.relpath(args.history, REPO) if args.history else '-'}`. "
            "The machine is shared: compare runs by their ratios, and look at the load.",
            "",
            "| date | commit | rounds | load (1 min) | floor ms | warm ms | naive ms | warm/floor [IQR] | naive/floor | note |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        + [
            f"| {r['date']} | {r['commit']} | {r['rounds']} | {r['load']} | {r['floor_ms']} | {r['warm_ms']} | "
            f"{r.get('naive_ms') or '–'} | {r['warm_floor']:.2f}× [{r['warm_floor_iqr'][0]:.2f}–{r['warm_floor_iqr'][1]:.2f}] | "
            f"{(str(r['naive_floor']) + '×') if r.get('naive_floor') else '–'} | {r.get('note', '')} |"
            for r in hist_rows
        ]
    )

    md = f"""# Breaks check: warm worker vs bare `explain` floor

Generated by `bench/engine/bench_breaks.py` on {now}.

- Command: `{cmd}`
- Machine: {platform.node()}, nproc={os.cpu_count()} (shared with other jobs; load average at the end {load_avg[0]:.2f} / {load_avg[1]:.2f} / {load_avg[2]:.2f}), {platform.platform(terse=True)}
- Python {platform.python_version()}, torch {env.get("torch")}, devices {env.get("devices")}; repo commit {commit}
- Workspace: `{os.path.relpath(root, REPO)}` ({len(files)} files with targets); {args.rounds} rounds, variants interleaved per file with the order rotated each round; worker restarts during the run: {restarts}
- Wall time: {t_total:.0f} s (worker start + `environment()` {t_env:.1f} s; warm-up done at {t_warm:.0f} s)

Cells: median (IQR) in ms per file over the rounds. Ratios: median [IQR] of the paired per-round ratios (the variants of one file run back to back, so load that drifts between rounds cancels).
`floor` = fresh import + `compile_example*` + `reset(); explain(fn)(*args)` per target in a warm process;
`floor+trace` = the same with `TraceCapture` attached; `jobs` = the worker's `discover_job` + `analyze_job`
called in-process; `warm` = `Engine.analyze_file(path, ["breaks"])` seen from the parent; `naive` = a fresh
`python -c` per file (interpreter + `import torch` + floor).

{table}

Target warm/floor ≤ 1.3×: **{"met" if paired_ratio(tot["warm"], tot["floor"]) <= 1.3 else "NOT met"}** (total warm/floor = {paired_ratio(tot["warm"], tot["floor"]):.2f}×, median of the per-round ratios; ratio of the medians {m["warm"] / m["floor"]:.2f}×).

## Where warm − floor goes

{chr(10).join(decomp)}

{chr(10).join(ph_rows)}

{chr(10).join(floor_parts)}

## Memory

| process | RSS | peak (VmHWM) |
|---|---|---|
| worker after warm-up (incl. {len(worker_kids)} child process(es): {mib(rss_worker_tree)}) | {mib(rss_worker["VmRSS"])} | {mib(rss_worker["VmHWM"])} |
| worker at the end | {mib(rss_worker_end["VmRSS"])} | {mib(rss_worker_end["VmHWM"])} |
| engine parent (this process, no torch) before importing dynamo_lens | {mib(rss_start["VmRSS"])} | |
| engine parent after `environment()` | {mib(rss_engine_started["VmRSS"])} | |
| engine parent after warm-up | {mib(rss_parent_warm["VmRSS"])} | {mib(rss_parent_warm["VmHWM"])} |
| engine parent at the end | {mib(rss_parent_end["VmRSS"])} | {mib(rss_parent_end["VmHWM"])} |
| floor helper after warm-up (bare torch + explain, for comparison) | {mib(rss_helper_warm["VmRSS"])} | {mib(rss_helper_warm["VmHWM"])} |
| floor helper at the end (it ran the in-process variants every round) | {mib(rss_helper_end["VmRSS"])} | {mib(rss_helper_end["VmHWM"])} |

{hist_md}

## Sanity

{chr(10).join(sanity)}

`explain`'s `graph_break_count` is not the number of findings: the engine keeps one finding per site
(deepest workspace line and break type), and adds breaks that only the structured trace shows, after
which nothing compiles (losses: `graph_break_count` 0, one finding). The number of break findings equals
the number of graph-break rows in `example_workspace/EXPECTED.md`. Files without targets are skipped
(`common.py`: its break is reported through cnn's example).
"""
    # The hand-written notes after NOTES in the results file (what the numbers led to) stay.
    out = Path(args.out)
    old = out.read_text() if out.exists() else ""
    if NOTES in old:
        md = md.rstrip() + "\n\n" + old[old.index(NOTES) :]
    out.write_text(md)
    print(md)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
