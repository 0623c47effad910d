"""Score the engine against torch on the real-code corpus (cases.py).

For each case whose packages are installed: build its workspace under out/realworld, take the
ground truth from torch alone (groundtruth.py, a separate process), run the engine's breaks and
recompiles checks on every workspace file (backend "eager": Dynamo, not codegen), and compare:

- break recall: torch's break sites (file, line) that a finding reports (a library break by its
  deepest frame, which the finding names); false breaks: findings at sites torch never logged;
- recompile agreement on declared variants: the count, and whether either side says "again and
  again" (a warning: the same frame recompiled twice or more, or the limit hit); severity is
  measured against torch by fresh values: where the variants recompile a frame once, torch gets
  one more call with a fresh value (groundtruth.py) and a second compile makes it a warning;
- probe agreement: no probe warning where torch recompiled each probed dim at most once;
- error findings torch itself did not raise, and crashes (a dead worker, an internal error).

    .venv/bin/python bench/realworld/score.py [--only NAME ...] [--out bench/realworld/RESULTS.md]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from dynamo_lens.config import load  # noqa: E402
from dynamo_lens.engine.analysis import Engine  # noqa: E402
from dynamo_lens.findings import Finding, Kind, Severity, TargetId  # noqa: E402

from bench.common import machine  # noqa: E402
from bench.corpora.realworld import CASES, Case  # noqa: E402

CHECKS = ["breaks", "recompiles"]


def available(case: Case) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in case.requires)


def build(case: Case, root: Path) -> Path:
    ws = root / case.name / "ws"
    shutil.rmtree(ws, ignore_errors=True)
    ws.mkdir(parents=True)
    (ws / "example.py").write_text(case.example)
    for dest, src in case.copy.items():
        pkg, _, rest = src.partition("/")
        spec = importlib.util.find_spec(pkg)
        assert spec is not None and spec.submodule_search_locations, pkg
        shutil.copy(Path(next(iter(spec.submodule_search_locations))) / rest, ws / dest)
    return ws


def ground_truth(ws: Path, out: Path) -> dict[str, Any]:
    shutil.rmtree(out.parent / f"{out.stem}-trace", ignore_errors=True)
    proc = subprocess.run(
        [sys.executable, str(HERE / "groundtruth.py"), str(ws), str(out)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"ground truth failed:\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


def _site(f: Finding) -> tuple[str, int]:
    deepest = f.stack[-1] if f.stack else None
    if deepest is None:
        return os.path.realpath(f.path), f.line
    return os.path.realpath(deepest.path), deepest.line


def score_case(case: Case, root: Path) -> dict[str, Any]:
    ws = build(case, root)
    t0 = time.monotonic()
    truth = ground_truth(ws, root / case.name / "truth.json")
    t_truth = time.monotonic() - t0
    cfg, problems = load(ws, {"backend": "eager"})
    assert not problems, problems
    logs: list[str] = []
    t0 = time.monotonic()
    with Engine(ws, cfg, on_log=logs.append) as eng:
        results = [eng.analyze_file(p, CHECKS) for p in sorted(ws.glob("*.py"))]
    t_ours = time.monotonic() - t0
    findings = [f for r in results for f in r.all_findings()]
    reports = {TargetId.parse(r.target).short: r for res in results for r in res.reports}

    torch_sites = {(p, line) for t in truth["targets"] for p, line, _ in t["sites"]}
    breaks = [f for f in findings if f.is_break]
    our_sites = {_site(f) for f in breaks}
    errors = [f for f in findings if f.severity == Severity.ERROR]
    torch_raised = any(t["raised"] for t in truth["targets"])
    crashes = [f for f in errors if "internal error" in f.message or "worker" in f.message]

    rec_rows = []
    for t in truth["targets"]:
        short = t["unit"] if t["index"] is None else f"{t['unit']}[{t['index']}]"
        rep = reports.get(short)
        mine = [f for f in findings if f.kind == Kind.RECOMPILE and f.target and short in f.target]
        our_warn = any(f.severity == Severity.WARNING for f in mine)
        if t["declared"]:
            frames: dict[tuple[Any, Any], int] = {}
            for co_file, co_line, _ in t["recompile_guards"]:
                frames[(co_file, co_line)] = frames.get((co_file, co_line), 0) + 1
            torch_warn = t["limit"] or any(n >= 2 for n in frames.values())
            # Severity measured against torch by a fresh value: a frame that recompiles again
            # for it is one that goes on recompiling.
            fresh = t.get("fresh_recompile_guards")
            measured = fresh is not None and not t.get("fresh_raised")
            if measured:
                after: dict[tuple[Any, Any], int] = {}
                for co_file, co_line, _ in fresh:
                    after[(co_file, co_line)] = after.get((co_file, co_line), 0) + 1
                torch_warn = torch_warn or any(n >= 2 for n in after.values())
            rec_rows.append(
                {
                    "target": short,
                    "kind": "variants",
                    "torch": t["recompiles"],
                    "ours": rep.recompile_count if rep else None,
                    "torch_warn": torch_warn,
                    "our_warn": our_warn,
                    "fresh": "measured" if measured else "",
                    "agree": rep is not None
                    and rep.recompile_count == t["recompiles"]
                    and torch_warn == our_warn,
                    "severity_agrees": torch_warn == our_warn,
                }
            )
        else:
            torch_warn = any(n >= 2 for n in t["probe_recompiles"])
            rec_rows.append(
                {
                    "target": short,
                    "severity_agrees": torch_warn == our_warn,
                    "fresh": "",
                    "kind": "probes",
                    "torch": t["probe_recompiles"],
                    "ours": rep.recompile_count if rep else None,
                    "torch_warn": torch_warn,
                    "our_warn": our_warn,
                    "agree": torch_warn == our_warn,
                }
            )
    return {
        "case": case.name,
        "what": case.what,
        "torch": truth["torch"],
        "torch_sites": sorted(torch_sites),
        "our_sites": sorted(our_sites),
        "recall": len(torch_sites & our_sites) / len(torch_sites) if torch_sites else 1.0,
        "missed": sorted(torch_sites - our_sites),
        "false_breaks": sorted(our_sites - torch_sites),
        "recompiles": rec_rows,
        "errors": [f.text for f in errors if not torch_raised],
        "crashes": [f.text for f in crashes],
        "seconds": {"torch": round(t_truth, 1), "ours": round(t_ours, 1)},
        "messages": [f"{Path(f.path).name}:{f.line}: {f.text}" for f in findings],
    }


def _rel(p: str) -> str:
    for marker in ("site-packages/", "/ws/"):
        if marker in p:
            return p.rsplit(marker, 1)[1]
    return p


def _word(warn: bool) -> str:
    return "warning" if warn else "info"


def render(rows: list[dict[str, Any]], skipped: list[str], failed: list[str]) -> str:
    total_sites = sum(len(r["torch_sites"]) for r in rows)
    found = sum(len(r["torch_sites"]) - len(r["missed"]) for r in rows)
    false = sum(len(r["false_breaks"]) for r in rows)
    recs = [x for r in rows for x in r["recompiles"]]
    var = [x for x in recs if x["kind"] == "variants"]
    probes = [x for x in recs if x["kind"] == "probes"]
    probe_false = [x for x in probes if x["our_warn"] and not x["torch_warn"]]
    errors = sum(len(r["errors"]) for r in rows)
    crashes = sum(len(r["crashes"]) for r in rows)
    out = [
        "# Real-code corpus: the engine against torch",
        "",
        f"`{' '.join(['.venv/bin/python', 'bench/realworld/score.py'])}` on {machine()}, "
        f"torch {rows[0]['torch'] if rows else '?'}, backend eager, checks breaks+recompiles. "
        "Ground truth: torch's own structured trace from `groundtruth.py` (no Dynamo Lens "
        "code), same calls.",
        "",
        "| measure | result | goal |",
        "|---|---|---|",
        f"| cases | {len(rows)} | ≥ 15 |",
        f"| torch break sites reported | {found}/{total_sites} | all |",
        f"| false breaks | {false} | 0 |",
        f"| recompile agreement, declared variants (count and severity) | "
        f"{sum(x['agree'] for x in var)}/{len(var)} | all |",
        f"| recompile severities that agree with torch, measured by fresh values | "
        f"{sum(x['severity_agrees'] for x in recs)}/{len(recs)} | all |",
        f"| probe warnings where torch recompiles once per dim | {len(probe_false)} | 0 |",
        f"| probe agreement | {sum(x['agree'] for x in probes)}/{len(probes)} | all |",
        f"| error findings torch did not raise | {errors} | 0 |",
        f"| crashes | {crashes} | 0 |",
        "",
        "| case | what | torch sites | found | false | recompiles (torch / ours) | "
        "severity (torch / ours) | errors | s torch / ours |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        rec = "; ".join(
            f"{x['target']}: {x['torch']} / {x['ours']}"
            + (" ⚠" if x["our_warn"] else "")
            + ("" if x["agree"] else " ✗")
            for x in r["recompiles"]
        )
        sev = "; ".join(
            f"{_word(x['torch_warn'])}{' (fresh value)' if x['fresh'] else ''} / "
            f"{_word(x['our_warn'])}" + ("" if x["severity_agrees"] else " ✗")
            for x in r["recompiles"]
        )
        out.append(
            f"| {r['case']} | {r['what']} | {len(r['torch_sites'])} | "
            f"{len(r['torch_sites']) - len(r['missed'])} | {len(r['false_breaks'])} | {rec} | "
            f"{sev} | {len(r['errors'])} | {r['seconds']['torch']} / {r['seconds']['ours']} |"
        )
    out += ["", "## Findings, per case", ""]
    for r in rows:
        out.append(f"**{r['case']}**")
        out += [f"- {m}" for m in r["messages"]] or ["- (none)"]
        for p, line in r["missed"]:
            out.append(f"- MISSED: torch broke at {_rel(p)}:{line}")
        for p, line in r["false_breaks"]:
            out.append(f"- FALSE: {_rel(p)}:{line}")
        out.append("")
    if skipped:
        out += ["Skipped (packages not installed): " + ", ".join(skipped), ""]
    if failed:
        out += ["Cases whose ground truth or scoring failed: " + ", ".join(failed), ""]
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument("--work", type=Path, default=REPO / "out" / "realworld")
    args = ap.parse_args()
    rows, skipped, failed = [], [], []
    for case in CASES:
        if args.only and case.name not in args.only:
            continue
        if not available(case):
            skipped.append(case.name)
            continue
        print(f"{case.name} ...", file=sys.stderr, flush=True)
        try:
            row = score_case(case, args.work)
        except Exception as exc:  # one broken case must not lose the others' results
            print(f"  FAILED: {exc}", file=sys.stderr)
            failed.append(f"{case.name} ({type(exc).__name__})")
            continue
        print(
            f"  recall {row['recall']:.2f}, false {len(row['false_breaks'])}, "
            f"errors {len(row['errors'])}, {row['seconds']}",
            file=sys.stderr,
        )
        rows.append(row)
    args.work.mkdir(parents=True, exist_ok=True)
    (args.work / "scores.json").write_text(json.dumps(rows, indent=1))
    args.out.write_text(render(rows, skipped, failed))
    print(args.out, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
