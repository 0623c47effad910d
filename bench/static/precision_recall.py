"""Precision and recall of static hints against real graph breaks from torch._dynamo.explain.

    .venv/bin/python bench/static/precision_recall.py [--json OUT] [--verbose]

Inputs: every ``bench/corpora/static/*.py`` (each with a ``compile_example``) and the files of
``example_workspace/`` (run with its root on ``sys.path``), when present. Dynamic ground truth
comes from ``groundtruth.py`` in a subprocess (it imports torch; the static analysis never does).

- A hint is **correct** when a dynamic break lies on the same line of the same file.
- **precision** = correct hints / hints; **recall** = break lines with a hint / break lines.
- **hints on proven-clean code**: hints inside a function that the eager run executed and in
  which the dynamic run found no break at all. The target is zero.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

from dynamo_lens.findings import Finding, Frame, Kind, Severity  # noqa: E402
from dynamo_lens.static import Reconciler, analyze_path  # noqa: E402


def _functions_by_line(path: str) -> dict[int, str]:
    """line -> qualified name of the innermost function containing it."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    out: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str, in_func: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                q = f"{prefix}{child.name}"
                for ln in range(child.lineno, (child.end_lineno or child.lineno) + 1):
                    out[ln] = q
                visit(child, f"{q}.<locals>.", True)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", in_func)
            else:
                visit(child, prefix, in_func)

    visit(tree, "", False)
    return out


def _ground_truth(root: Path, files: list[Path]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "gt.json"
        cmd = [sys.executable, str(HERE / "groundtruth.py"), str(root), str(out)]
        cmd += [str(f) for f in files]
        proc = subprocess.run(
            cmd, cwd=str(root), capture_output=True, text=True, stdin=subprocess.DEVNULL
        )
        if proc.returncode != 0 or not out.exists():
            sys.stderr.write(proc.stderr[-4000:])
            raise SystemExit(f"ground truth failed for {root} (rc {proc.returncode})")
        data: dict[str, Any] = json.loads(out.read_text())
        return data


def evaluate(groups: list[tuple[str, Path, list[Path]]], verbose: bool) -> dict[str, Any]:
    per_file: list[dict[str, Any]] = []
    totals: Counter[str] = Counter()
    by_rule: dict[str, Counter[str]] = defaultdict(Counter)
    missed_by_gb: Counter[str] = Counter()
    unverified: list[str] = []
    for group, root, files in groups:
        gt = _ground_truth(root, files)
        # Breaks and coverage are per path: a break inside common.py may come from cnn.py's run.
        breaks_at: dict[str, dict[int, list[dict[str, Any]]]] = defaultdict(
            lambda: defaultdict(list)
        )
        covered: dict[str, set[int]] = defaultdict(set)
        errors: list[str] = []
        for fpath, entry in gt["files"].items():
            for b in entry["breaks"]:
                breaks_at[b["path"]][b["line"]].append(b)
            for p, lines in entry["covered"].items():
                covered[p].update(lines)
            errors += [f"{os.path.basename(fpath)}: {e}" for e in entry["errors"]]
        for f in files:
            real = os.path.realpath(f)
            hints = analyze_path(real)
            func_of = _functions_by_line(real)
            blines = breaks_at.get(real, {})
            hint_lines = {h.line for h in hints}
            broken_funcs = {func_of.get(ln) for ln in blines}
            executed_funcs = {func_of.get(ln) for ln in covered.get(real, set())} - {None}
            row: dict[str, Any] = {
                "group": group,
                "file": os.path.relpath(real, REPO),
                "hints": len(hints),
                "correct": 0,
                "break_lines": len(blines),
                "found": len(set(blines) & hint_lines),
                "clean_code_hints": 0,
                "false": [],
                "missed": [],
            }
            for h in hints:
                rule = str(h.data.get("rule"))
                if h.line in blines:
                    row["correct"] += 1
                    by_rule[rule]["correct"] += 1
                    continue
                by_rule[rule]["false"] += 1
                fn = str(h.data.get("function"))
                state = "unexecuted"
                if fn in executed_funcs and fn not in broken_funcs:
                    state = "proven-clean"
                    row["clean_code_hints"] += 1
                elif h.line in covered.get(real, set()):
                    state = "executed-no-break"
                else:
                    unverified.append(f"{row['file']}:{h.line}")
                row["false"].append(f"{h.line} {rule} ({state}) {h.message}")
            # Reconcile with the real run, as the daemon would: every hint in a function the run
            # executed should end up confirmed or refuted, and none should remain visible there.
            rec = Reconciler()
            dyn = [_as_finding(b) for bs in blines.values() for b in bs]
            source = Path(real).read_text(encoding="utf-8")
            rec.update_dynamic(real, source, dyn, executed_funcs, static_hints=hints)
            left = rec.visible(real, source, hints)
            row["visible_after_reconcile"] = len(left)
            row["visible_after_reconcile_in_executed"] = sum(
                1 for h in left if h.data.get("function") in executed_funcs
            )
            for ln, bs in sorted(blines.items()):
                if ln not in hint_lines:
                    gb = bs[0].get("gb_id") or bs[0].get("gb_type")
                    missed_by_gb[str(gb)] += 1
                    row["missed"].append(f"{ln} {gb} {bs[0].get('gb_type')}")
            for k in (
                "hints",
                "correct",
                "break_lines",
                "found",
                "clean_code_hints",
                "visible_after_reconcile",
                "visible_after_reconcile_in_executed",
            ):
                totals[k] += row[k]
            per_file.append(row)
        if errors and verbose:
            print(f"[{group}] errors while running examples:", *errors, sep="\n  ")
    precision = totals["correct"] / totals["hints"] if totals["hints"] else 1.0
    recall = totals["found"] / totals["break_lines"] if totals["break_lines"] else 1.0
    subsets = {
        name: _summary([r for r in per_file if pick(r)])
        for name, pick in (
            ("tuned (corpus written alongside the rules)", _is_tuned),
            ("holdout (corpus/holdout_*)", _is_holdout),
            ("example_workspace", lambda r: r["group"] == "example_workspace"),
        )
    }
    return {
        "subsets": subsets,
        "files": len(per_file),
        "hints": totals["hints"],
        "correct_hints": totals["correct"],
        "break_lines": totals["break_lines"],
        "break_lines_hinted": totals["found"],
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "hints_on_proven_clean_code": totals["clean_code_hints"],
        "visible_after_reconcile": totals["visible_after_reconcile"],
        "visible_after_reconcile_in_executed": totals["visible_after_reconcile_in_executed"],
        "by_rule": {r: dict(c) for r, c in sorted(by_rule.items())},
        "missed_by_gb": dict(missed_by_gb.most_common()),
        "per_file": per_file,
    }


def _as_finding(b: dict[str, Any]) -> Finding:
    return Finding(
        kind=Kind.GRAPH_BREAK,
        severity=Severity.WARNING,
        path=b["path"],
        line=b["line"],
        column=1,
        end_line=b["line"],
        end_column=2,
        message=f"Graph break: {b['gb_type']}",
        gb_id=b.get("gb_id"),
        stack=[Frame(b["path"], b["line"], b.get("func", ""))],
    )


def _is_holdout(row: dict[str, Any]) -> bool:
    return os.path.basename(str(row["file"])).startswith("holdout_")


def _is_tuned(row: dict[str, Any]) -> bool:
    return row["group"] == "corpus" and not _is_holdout(row)


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    t: Counter[str] = Counter()
    for r in rows:
        for k in ("hints", "correct", "break_lines", "found", "clean_code_hints"):
            t[k] += r[k]
    return {
        "files": len(rows),
        "hints": t["hints"],
        "break_lines": t["break_lines"],
        "precision": round(t["correct"] / t["hints"], 3) if t["hints"] else None,
        "recall": round(t["found"] / t["break_lines"], 3) if t["break_lines"] else None,
        "hints_on_proven_clean_code": t["clean_code_hints"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the full result here")
    ap.add_argument("--verbose", action="store_true", help="print per-file misses and errors")
    ap.add_argument("--no-workspace", action="store_true", help="corpus only")
    args = ap.parse_args()

    corpus = REPO / "bench" / "corpora" / "static"
    groups: list[tuple[str, Path, list[Path]]] = [
        ("corpus", corpus, sorted(p for p in corpus.glob("*.py") if p.name != "__init__.py"))
    ]
    ws = REPO / "example_workspace"
    if ws.is_dir() and not args.no_workspace:
        files = sorted(
            p
            for p in ws.rglob("*.py")
            if p.name != "__init__.py" and "broken" not in p.parts and "tests" not in p.parts
        )
        if files:
            groups.append(("example_workspace", ws, files))
    res = evaluate(groups, args.verbose)
    for row in res["per_file"]:
        if args.verbose or row["false"] or row["missed"]:
            status = (
                f"{row['correct']}/{row['hints']} hints ok, "
                f"{row['found']}/{row['break_lines']} breaks"
            )
            print(f"{row['file']}: {status}")
            for x in row["false"]:
                print(f"    false hint: {x}")
            for x in row["missed"]:
                print(f"    missed:     {x}")
    print()
    print(f"files: {res['files']}  hints: {res['hints']}  break lines: {res['break_lines']}")
    print(f"precision: {res['precision']:.3f}  ({res['correct_hints']}/{res['hints']})")
    print(f"recall:    {res['recall']:.3f}  ({res['break_lines_hinted']}/{res['break_lines']})")
    print(f"hints on code the dynamic check proves clean: {res['hints_on_proven_clean_code']}")
    print(
        "after Reconciler.update_dynamic with these runs: "
        f"{res['visible_after_reconcile']} hints still visible, "
        f"{res['visible_after_reconcile_in_executed']} of them in executed functions"
    )
    for name, sub in res["subsets"].items():
        print(f"  {name}: {json.dumps(sub)}")
    print("by rule:", json.dumps(res["by_rule"]))
    if res["missed_by_gb"]:
        print("missed breaks by GB id:", json.dumps(res["missed_by_gb"]))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
