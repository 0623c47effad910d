"""Reading a large structured trace: Dynamo Lens (``dynamo-lens trace``) beside tlparse on the
same log, and the overhead of ``dynamo-lens run`` over the bare command.

    .venv/bin/python bench/trace/bench_trace.py [--sizes 125,500,1000] [--rounds 3]

The logs are generated from a real one: ``workload.py`` (a small transformer trained with
torch.compile/inductor, a graph break, a recompile) runs once with ``TORCH_TRACE``; its log is
repeated, each copy's frames renumbered, up to each size (what a long multi-frame job writes).
Each tool runs as its own process, interleaved round by round; wall time and peak RSS (wait4's
ru_maxrss) per run. Writes bench/trace/RESULTS.md (commit it on purpose) and out/bench-trace/.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
from bench.common import fmt_ms, machine, q, ratio_cell  # noqa: E402

OUT = REPO / "out" / "bench-trace"
PY = sys.executable
ENV = {**os.environ, "PYTHONPATH": str(REPO / "daemon")}
_FRAME = re.compile(rb'"frame_id": (\d+)')


def tlparse() -> str | None:
    found = shutil.which("tlparse") or str(Path(PY).parent / "tlparse")
    return found if os.access(found, os.X_OK) else None


def seed() -> Path:
    """One real trace of the workload (recorded once, then reused)."""
    d = OUT / "seed"
    logs = sorted(d.glob("*.log")) if d.exists() else []
    if logs:
        return logs[0]
    shutil.rmtree(d, ignore_errors=True)
    subprocess.run(
        [PY, str(HERE / "workload.py"), "6"],
        cwd=HERE,
        env={**ENV, "TORCH_TRACE": str(d)},
        check=True,
        capture_output=True,
    )
    return sorted(d.glob("*.log"))[0]


def make(size_mb: int, src: Path) -> Path:
    """``src`` repeated to ``size_mb`` MB, each copy's frame ids moved past the last copy's."""
    out = OUT / f"trace-{size_mb}MB.log"
    if out.exists() and out.stat().st_size >= size_mb * 1e6:
        return out
    data = src.read_bytes()
    top = max((int(m) for m in _FRAME.findall(data)), default=0) + 1
    with out.open("wb") as fh:
        k = 0
        while fh.tell() < size_mb * 1e6:
            off = k * top

            def shift(m: re.Match[bytes], off: int = off) -> bytes:
                return b'"frame_id": %d' % (int(m[1]) + off)

            fh.write(_FRAME.sub(shift, data))
            k += 1
    return out


def measure(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one process (and its waited-for children)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env={**ENV, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) not in (0, 1):  # 1: findings at warning
        raise RuntimeError(f"{cmd} exited {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_maxrss / 1024


def ours(log: Path) -> list[str]:
    return [PY, "-m", "dynamo_lens", "trace", str(log), "--workspace", str(HERE),
            "--format", "json", "-o", str(OUT / "findings.json")]  # fmt: skip


def theirs(log: Path) -> list[str]:
    return [tlparse() or "tlparse", str(log), "-o", str(OUT / "tl_out"), "--overwrite",
            "--no-browser"]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="125,500,1000", help="trace sizes in MB")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--run-rounds", type=int, default=5)
    ap.add_argument("--steps", default="40,2000", help="training steps of the run workload")
    ap.add_argument("--tlparse-max-mb", type=int, default=500, help="largest size tlparse reads")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    src = seed()
    findings = json.loads(
        subprocess.run(
            [*ours(src)[:-2], "-o", "/dev/stdout"], cwd=HERE, env=ENV, capture_output=True
        ).stdout
    )["findings"]
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for size in sizes:
        log = make(size, src)
        mb = log.stat().st_size / 1e6
        runs: dict[str, list[tuple[float, float]]] = {"ours": [], "tlparse": []}
        with_tl = tlparse() is not None and size <= args.tlparse_max_mb
        for _ in range(args.rounds):
            runs["ours"].append(measure(ours(log), HERE))
            if with_tl:
                runs["tlparse"].append(measure(theirs(log), HERE))
        rows.append((size, mb, runs))
        print(size, {k: v for k, v in runs.items()}, flush=True)
    by_steps: dict[int, dict[str, list[float]]] = {}
    for steps in (int(x) for x in args.steps.split(",")):
        runs_by: dict[str, list[float]] = by_steps.setdefault(
            steps, {"bare": [], "torch": [], "ours": []}
        )
        workload = [PY, str(HERE / "workload.py"), str(steps)]
        measure(workload, HERE)  # inductor's caches warm for all
        for _ in range(args.run_rounds):
            runs_by["bare"].append(measure(workload, HERE)[0])
            # torch's own cost of writing its structured trace, which `run` switches on
            trace_env = {"TORCH_TRACE": str(OUT / "torch-only")}
            runs_by["torch"].append(measure(workload, HERE, trace_env)[0])
            shutil.rmtree(OUT / "torch-only", ignore_errors=True)
            cmd = [PY, "-m", "dynamo_lens", "run", "--format", "json", "-o", str(OUT / "run.json")]
            runs_by["ours"].append(measure([*cmd, "--", *workload], HERE)[0])
    write(rows, by_steps, findings, src)


def write(rows, by_steps, findings, src) -> None:  # type: ignore[no-untyped-def]
    lines = [
        "# Reading large traces, and the cost of `dynamo-lens run`",
        "",
        "```",
        ".venv/bin/python bench/trace/bench_trace.py",
        "```",
        "",
        f"Machine: {machine()}; tlparse {_tl_version()}; seed trace {src.stat().st_size / 1e6:.1f}"
        f" MB from `workload.py` ({len(findings)} findings: "
        + ", ".join(sorted({f["kind"] for f in findings}))
        + "), repeated with renumbered frames.",
        "",
        "| trace | Dynamo Lens: s, median (IQR) | MB/s | peak RSS MiB | tlparse: s | MB/s | "
        "peak RSS MiB | time ratio (ours / tlparse) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for _size, mb, runs in rows:
        o = runs["ours"]
        t = runs["tlparse"]
        ow = [w for w, _ in o]
        cells = [
            f"{mb:.0f} MB",
            fmt_s(ow),
            f"{mb / q(ow)[1]:.0f}",
            f"{max(m for _, m in o):.0f}",
        ]
        if t:
            tw = [w for w, _ in t]
            cells += [fmt_s(tw), f"{mb / q(tw)[1]:.0f}", f"{max(m for _, m in t):.0f}",
                      ratio_cell(ow, tw)]  # fmt: skip
        else:
            cells += ["—", "—", "—", "—"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "`dynamo-lens run` over the bare command `python workload.py STEPS` (inductor caches "
        "warm), interleaved per round. Torch's structured trace costs per compile, so the "
        "short run (mostly compiling) is the worst case; a longer job dilutes it:",
        "",
        "| steps | bare command, ms | with `TORCH_TRACE` set (torch writing its trace) | "
        "`dynamo-lens run -- …` | run / bare | run / traced command (our own share) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for steps, r in by_steps.items():
        lines.append(
            f"| {steps} | {fmt_ms(r['bare'])} | {fmt_ms(r['torch'])} "
            f"({ratio_cell(r['torch'], r['bare'])}) | {fmt_ms(r['ours'])} | "
            f"{ratio_cell(r['ours'], r['bare'])} | {ratio_cell(r['ours'], r['torch'])} |"
        )
    lines.append("")
    (HERE / "RESULTS.md").write_text("\n".join(lines))
    print("\n".join(lines))


def fmt_s(xs: list[float]) -> str:
    q1, med, q3 = q(xs)
    return f"{med:.1f} ({q1:.1f}–{q3:.1f})"


def _tl_version() -> str:
    tl = tlparse()
    if tl is None:
        return "not installed"
    return subprocess.run([tl, "--version"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()
