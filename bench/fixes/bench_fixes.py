"""Verified fixes on a corpus: breaks removed (counted by torch), outputs kept,
recompiles added, files edited outside the workspace, and the time to a verified fix against
one breaks check of the file.

    .venv/bin/python bench/fixes/bench_fixes.py [--corpus static|transformers|realworld|graphmend]
        [--out FILE] [--only NAME]
    .venv/bin/python bench/fixes/bench_fixes.py --summary   # SUMMARY.md from the three records

Per file of the corpus (bench/corpora), in a workspace of its own under one temporary root:
the static modules (65, each with a ``compile_example``; the clean ones too, where nothing may
be offered; RESULTS.md), the transformers models of ``hf_models.py``, built from small configs
from the installed package (RESULTS-transformers.md), the real-code cases of ``realworld.py``
(its ``example.py``, and the package module files a case copies into its workspace;
RESULTS-realworld.md) or the GraphMend sites (RESULTS-graphmend.md). Each run also records its
rows (``results-<corpus>.json``), which ``--summary`` adds up over the corpora (SUMMARY.md):

1. a warm engine (``backend="eager"``) checks the file for breaks, twice; the second is timed;
2. ``fixes_for`` proposes and verifies a rewrite per break: timed, each break's verification
   alone (what the editor's "Verify, then apply" runs for the break the user asks about: the
   goal's measure) and all of the file's together;
3. ``apply_verified`` writes the verified rewrites one at a time, as ``dynamo-lens fix --apply``;
4. harness.py, torch alone in a fresh process, compares the original file with the fixed one:
   breaks before and after (``explain``), outputs and gradients (bitwise), recompiles.

Every file outside the workspaces (the corpus, and the installed transformers package) is hashed
before and after: an edit there is counted.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent.parent))
from dynamo_lens.config import load  # noqa: E402
from dynamo_lens.engine.analysis import Engine  # noqa: E402
from dynamo_lens.engine.fixing import apply_verified, fixes_for  # noqa: E402

from bench.common import machine  # noqa: E402

CORPORA = REPO / "bench" / "corpora"
CORPUS = CORPORA / "static"
TITLES = {
    "static": "static corpus (bench/corpora/static)",
    "transformers": "transformers models (small configs, bench/corpora/hf_models.py)",
    "realworld": "real-code corpus (bench/corpora/realworld.py)",
    "graphmend": "GraphMend-model sites (bench/corpora/graphmend, written here)",
}
PYPROJECT = '[tool.dynamo-lens]\nbackend = "eager"\ndevices = ["cpu"]\n'


def _hashes(root: Path) -> dict[str, str]:
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def _corpus(name: str, tmp: Path) -> Path:
    """The folder of the corpus's files (bench/corpora): the static modules, the GraphMend
    sites, the transformers models written from transformers.py into ``tmp``, or the real-code
    cases (``<case>.py``, and the files a case copies from its package in ``<case>/``)."""
    if name == "static":
        return CORPUS
    if name == "graphmend":
        return CORPORA / "graphmend"
    out = tmp / name
    out.mkdir()
    if name == "transformers":
        from bench.corpora import hf_models

        for file, text in hf_models.sources().items():
            (out / file).write_text(text)
        return out
    from bench.realworld import score  # builds a case's workspace: its example, copied files

    for case in score.CASES:
        if not score.available(case):
            print(f"skipped {case.name}: {', '.join(case.requires)} not installed", file=sys.stderr)
            continue
        stem = case.name.replace("-", "_")
        ws = score.build(case, tmp / "cases")
        (ws / "example.py").rename(out / f"{stem}.py")
        if case.copy:
            shutil.copytree(ws, out / stem)
    return out


def run(only: str | None, corpus_name: str = "static") -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="dl-bench-fixes-"))
    root, originals = tmp / "ws", tmp / "originals"
    root.mkdir()
    originals.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT)
    corpus = _corpus(corpus_name, tmp)
    files = sorted(p for p in corpus.glob("*.py") if only is None or p.stem == only)
    for p in files:
        (root / p.stem).mkdir()
        shutil.copy(p, root / p.stem / p.name)
        shutil.copy(p, originals / p.name)
        if (corpus / p.stem).is_dir():  # module files the example imports, beside it
            shutil.copytree(corpus / p.stem, root / p.stem, dirs_exist_ok=True)
            shutil.copytree(corpus / p.stem, originals, dirs_exist_ok=True)
    # The installed packages too: a fix of a library's break must edit none of its files.
    libraries = [Path(m.__file__).parent for m in _libraries()]
    outside = _hashes(originals) | _hashes(corpus)
    for lib in libraries:
        outside |= _hashes(lib)
    cfg, _ = load(root, {"checks": ["breaks"]})
    rows = []
    t0 = time.monotonic()
    with Engine(root, cfg) as engine:
        for p in files:
            path = root / p.stem / p.name
            engine.analyze_file(path, ["breaks"])  # warm: imports, first compile
            t = time.perf_counter()
            res = engine.analyze_file(path, ["breaks"])
            t_check = time.perf_counter() - t
            t = time.perf_counter()
            tried = fixes_for(engine, res)
            t_fix = time.perf_counter() - t
            done = apply_verified(engine, str(path), checks=("breaks",))
            applied, left = done.applied, done.left
            truth = subprocess.run(
                [sys.executable, str(HERE / "harness.py"), str(originals / p.name), str(path)],
                capture_output=True,
                text=True,
                timeout=600,
            )
            row: dict[str, Any] = {
                "file": p.name,
                "offered": sum(1 for f in tried if f.rewrite is not None),
                "verified": sum(1 for f in tried if f.verified),
                # Verified, but equal on the example only (no input took the other path):
                # offered, never applied.
                "example_only": sum(1 for f in tried if f.verified and not f.applicable),
                "rules_tried": [
                    (f.rewrite.rule, f.verified) for f in tried if f.rewrite is not None
                ],
                "rejected": [f.why for f in tried if f.rewrite is not None and not f.verified],
                "applied": [f.rewrite.rule for f in applied if f.rewrite is not None],
                "left": len(left),
                "t_check": t_check,
                "t_fix": t_fix if tried and any(f.rewrite for f in tried) else None,
                # Each verified fix alone: the editor verifies the break the user asks about.
                "t_verified": [f.seconds for f in tried if f.verified],
            }
            try:
                row |= json.loads(truth.stdout.strip().splitlines()[-1])
            except (IndexError, json.JSONDecodeError):
                row["harness_error"] = (truth.stderr.strip().splitlines() or ["?"])[-1]
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    after = _hashes(originals) | _hashes(corpus)
    for lib in libraries:
        after |= _hashes(lib)
    edited_outside = sum(1 for k, v in after.items() if outside.get(k) != v)
    shutil.rmtree(tmp, ignore_errors=True)
    return {"rows": rows, "edited_outside": edited_outside, "seconds": time.monotonic() - t0}


def _libraries() -> list[Any]:
    """The installed packages the corpora's models come from."""
    out = []
    for name in (
        "transformers",
        "x_transformers",
        "einops",
        "local_attention",
        "vit_pytorch",
        "mlp_mixer_pytorch",
        "perceiver_pytorch",
        "rotary_embedding_torch",
    ):
        try:
            out.append(importlib.import_module(name))
        except ImportError:
            pass
    return out


def markdown(res: dict[str, Any], cmd: str, corpus_name: str = "static") -> str:
    import torch  # only for the version line

    rows = res["rows"]
    with_breaks = [r for r in rows if r.get("breaks_before", 0) > 0]
    before = sum(r["breaks_before"] for r in with_breaks)
    fixed_files = [r for r in rows if r["applied"]]
    # Removed only where a rewrite was applied: a file with random control flow
    # (torchvision_random_flip) can show another count on an unchanged second run.
    removed_n = sum(r.get("breaks_before", 0) - r.get("breaks_after", 0) for r in fixed_files)
    equal = sum(1 for r in fixed_files if r.get("equal"))
    equal_other = sum(1 for r in fixed_files if r.get("equal", False) and r.get("equal_other"))
    other_fail = [
        f"{r['file']} ({r.get('detail_other', '')})"
        for r in fixed_files
        if not r.get("equal_other", True)
    ]
    kept = sum(1 for r in fixed_files if r.get("behaviour_kept"))
    kept_fail = [
        f"{r['file']} ({r.get('detail_behaviour', '')})"
        for r in fixed_files
        if not r.get("behaviour_kept", False)
    ]
    example_only = sum(r.get("example_only", 0) for r in rows)
    # Torch's own count must fall wherever a verified fix was applied: else it was a false
    # "verified".
    unconfirmed = [
        r["file"] for r in fixed_files if r.get("breaks_after", 0) >= r.get("breaks_before", 0)
    ]
    new_rc = sum(
        max(0, r.get("recompiles_after", 0) - r.get("recompiles_before", 0)) for r in fixed_files
    )
    clean_offered = sum(r["verified"] for r in rows if r.get("breaks_before", 0) == 0)
    ratios = sorted(r["t_fix"] / r["t_check"] for r in rows if r["t_fix"] and r["t_check"])
    med = ratios[len(ratios) // 2] if ratios else float("nan")
    each = sorted(t / r["t_check"] for r in rows for t in r.get("t_verified", []) if r["t_check"])
    med_each = each[len(each) // 2] if each else float("nan")
    removed = 100.0 * removed_n / before if before else 0.0
    goal = "≥ 72% (GraphMend's)" if corpus_name == "graphmend" else "≥ 80%"
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    out = [
        f"# Verified fixes on the {TITLES[corpus_name]}",
        "",
        f"Generated by `{cmd}` on {now}; {res['seconds']:.0f} s.",
        f"Machine: {platform.platform()}, {machine()}. Python {platform.python_version()}, "
        f"torch {torch.__version__}, backend `eager`. Method: the docstring of `bench_fixes.py`;"
        " breaks, outputs and recompiles from `harness.py` (torch only).",
        "",
        "| measure | result | goal |",
        "|---|---|---|",
        f"| breaks removed by verified fixes (torch's count, {len(with_breaks)} files with breaks)"
        f" | {removed_n} of {before} ({removed:.0f}%) | {goal} |",
        f"| applied verified fixes that keep the outputs (bitwise, gradients too) | {equal} of "
        f"{len(fixed_files)} files | 100% |",
        "| applied verified fixes that keep outputs, gradients and raising on inputs and "
        f"weights the example never used | {equal_other} of {len(fixed_files)} files"
        f"{' (not: ' + '; '.join(other_fail) + ')' if other_fail else ''} | 100% |",
        "| applied verified fixes that keep behaviour: the exception (type, message), log "
        "records, warnings and printed text, eager and compiled, on the example and those "
        f"inputs | {kept} of {len(fixed_files)} files"
        f"{' (not: ' + '; '.join(kept_fail) + ')' if kept_fail else ''} | 100% |",
        "| verified on the example only (no input took the other path): offered, not applied "
        f"| {example_only} | — |",
        f"| applied verified fixes after which torch's count did not fall | {len(unconfirmed)}"
        f"{' (' + ', '.join(unconfirmed) + ')' if unconfirmed else ''} | 0 |",
        f"| new recompiles after a fix | {new_rc} | 0 |",
        f"| edits outside the workspace | {res['edited_outside']} | 0 |",
        f"| verified rewrites on files torch finds no break in | {clean_offered} | 0 |",
        f"| time to a verified fix / one breaks check of the file (median of {len(each)} "
        f"verified fixes) | {med_each:.2f}× (range {each[0]:.2f}–{each[-1]:.2f}) | ≤ 2× |"
        if each
        else "| time to a verified fix | no fix verified | ≤ 2× |",
        f"| all of a file's breaks tried / one breaks check (median of {len(ratios)} files)"
        f" | {med:.2f}× (range {ratios[0]:.2f}–{ratios[-1]:.2f}) | — |"
        if ratios
        else "| all of a file's breaks tried | no rewrite tried | — |",
        "",
        "## Per rule",
        "",
        "| rule | tried | verified | applied |",
        "|---|---|---|---|",
    ]
    tried = Counter(rule for r in rows for rule, _ in r["rules_tried"])
    verified = Counter(rule for r in rows for rule, ok in r["rules_tried"] if ok)
    applied = Counter(x for r in rows for x in r["applied"])
    for rule in sorted(tried):
        out.append(f"| `{rule}` | {tried[rule]} | {verified[rule]} | {applied[rule]} |")
    out += [
        "",
        "## Per file (files with a break, or with a rewrite)",
        "",
        "| file | breaks before → after | rewrites applied | outputs equal | recompiles before → "
        "after | check ms | verify ms (all breaks) | not verified |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if not r.get("breaks_before") and not r["offered"]:
            continue
        why = "; ".join(r["rejected"])[:160] or ("" if r["offered"] else "no rewrite matches")
        verify_ms = "—" if r["t_fix"] is None else f"{r['t_fix'] * 1000:.0f}"
        out.append(
            f"| `{r['file']}` | {r.get('breaks_before', '?')} → {r.get('breaks_after', '?')} | "
            f"{', '.join(r['applied']) or '—'} | {r.get('equal', r.get('harness_error', '?'))} | "
            f"{r.get('recompiles_before', '?')} → {r.get('recompiles_after', '?')} | "
            f"{r['t_check'] * 1000:.0f} | "
            f"{verify_ms} | "
            f"{why.replace('|', '/')} |"
        )
    if corpus_name == "graphmend":
        # What the corpus is, and GraphMend's published figures beside ours.
        out += ["", (CORPORA / "graphmend" / "README.md").read_text().rstrip("\n")]
    return "\n".join(out) + "\n"


def summary() -> str:
    """The three corpora's records added up: what the issue's goals are measured on."""
    out = [
        "# Verified fixes: the three corpora together",
        "",
        "`bench/fixes/bench_fixes.py --summary`, from the records each corpus's run wrote "
        "(`results-<corpus>.json`; the per-corpus RESULTS files say when and where each ran).",
        "",
        "| corpus | breaks (torch) | removed by verified fixes | applied fixes keeping outputs "
        "bitwise | new recompiles | edits outside | verified on clean files | time to a verified "
        "fix / check (median) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    total: list[dict[str, Any]] = []
    outside = 0
    for name in ("static", "transformers", "realworld"):
        path = HERE / f"results-{name}.json"
        if not path.exists():
            out.append(f"| {name} | not run | | | | | | |")
            continue
        res = json.loads(path.read_text())
        total += res["rows"]
        outside += res["edited_outside"]
        out.append(_summary_row(name, res["rows"], res["edited_outside"]))
    out.append(_summary_row("**all**", total, outside))
    return "\n".join(out) + "\n"


def _summary_row(name: str, rows: list[dict[str, Any]], outside: int) -> str:
    before = sum(r.get("breaks_before", 0) for r in rows if r.get("breaks_before", 0) > 0)
    fixed = [r for r in rows if r["applied"]]
    removed = sum(r.get("breaks_before", 0) - r.get("breaks_after", 0) for r in fixed)
    equal = sum(1 for r in fixed if r.get("equal"))
    new_rc = sum(
        max(0, r.get("recompiles_after", 0) - r.get("recompiles_before", 0)) for r in fixed
    )
    clean = sum(r["verified"] for r in rows if r.get("breaks_before", 0) == 0)
    each = sorted(t / r["t_check"] for r in rows for t in r.get("t_verified", []) if r["t_check"])
    med = f"{each[len(each) // 2]:.2f}× ({len(each)})" if each else "—"
    pct = f"{100.0 * removed / before:.0f}%" if before else "—"
    return (
        f"| {name} | {before} | {removed} ({pct}) | {equal} of {len(fixed)} | {new_rc} | "
        f"{outside} | {clean} | {med} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", choices=sorted(TITLES), default="static")
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default=None)
    ap.add_argument("--summary", action="store_true")
    args = ap.parse_args()
    if args.summary:
        text = summary()
        (HERE / "SUMMARY.md").write_text(text)
        print(text)
        return
    if args.out is None:
        name = "RESULTS.md" if args.corpus == "static" else f"RESULTS-{args.corpus}.md"
        args.out = str(HERE / name)
    res = run(args.only, args.corpus)
    cmd = f"bench/fixes/bench_fixes.py --corpus {args.corpus}" + (
        f" --only {args.only}" if args.only else ""
    )
    text = markdown(res, cmd, args.corpus)
    Path(args.out).write_text(text)
    if args.only is None:
        (HERE / f"results-{args.corpus}.json").write_text(json.dumps(res, indent=1) + "\n")
    print(text)


if __name__ == "__main__":
    main()
