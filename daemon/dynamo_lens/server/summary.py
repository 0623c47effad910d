"""Human summaries of a target report: the hover's Markdown table and the benchmark rows."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from ..findings import DeviceTiming, Kind, Severity, TargetReport


def _ms(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    return f"{seconds * 1e3:.3g} ms"


def _break_even(t: DeviceTiming) -> str:
    if t.break_even_calls is None:
        return "never (compiled is not faster)"
    return f"{t.break_even_calls:,.0f} calls"


def timing_rows(report: TargetReport) -> list[dict[str, Any]]:
    return [
        {
            "device": t.device,
            "mode": t.mode,
            "dynamic": t.dynamic,
            "backend": t.backend,
            "eager_median_ms": t.eager_median * 1e3,
            "eager_iqr_ms": t.eager_iqr * 1e3,
            "compiled_median_ms": t.compiled_median * 1e3,
            "compiled_iqr_ms": t.compiled_iqr * 1e3,
            "speedup": t.speedup,
            "cold_compile_s": t.cold_compile,
            "break_even_calls": t.break_even_calls,
            "repeats": t.repeats,
            "threads": t.threads,
            "small_inputs": t.small_inputs,
        }
        for t in report.timings
    ]


def timing_table(report: TargetReport) -> str:
    if not report.timings:
        return "_No timings yet: run **Dynamo Lens: Benchmark target…**._"
    lines = [
        "| device | eager (median ± IQR) | compiled (median ± IQR) | speedup | cold compile "
        "| break-even |",
        "|---|---|---|---|---|---|",
    ]
    for t in report.timings:
        lines.append(
            f"| {t.device} | {_ms(t.eager_median)} ± {_ms(t.eager_iqr)} | "
            f"{_ms(t.compiled_median)} ± {_ms(t.compiled_iqr)} | {t.speedup:.2f}× | "
            f"{t.cold_compile:.2f} s | {_break_even(t)} |"
        )
    return "\n".join(lines)


def run_hover_markdown(report: TargetReport, *, stale: bool) -> str:
    """A compiled function as a run saw it: compile time, recompiles, graphs, guards."""
    e = report.environment
    name = report.target.rsplit("::", 1)[-1].rsplit("@", 1)[0]
    restarts = e.get("restarts") or []
    parts = [
        f"**Dynamo Lens** · `{name}` in {e.get('run') or 'a run'}"
        + (f", {e['ranks']}" if e.get("ranks") else "")
        + (" · ⚠ **stale**: the file changed since" if stale else ""),
        "",
        f"Compile time: **{e.get('compile_seconds', 0.0):.2f} s** (Dynamo "
        f"{e.get('dynamo_seconds', 0.0):.2f} s, Inductor {e.get('inductor_seconds', 0.0):.2f} s)"
        f" over {e.get('compiles', 0)} compilation(s)",
        "",
        f"Graphs: **{report.graph_count}** · breaks: **{report.break_count}** · "
        f"recompiles: **{report.recompile_count}** · guards: {e.get('guards', 0)}"
        + (f" · restarts: {len(restarts)}" if restarts else ""),
    ]
    if restarts:
        parts += ["", "Restarted because: " + "; ".join(f"`{r}`" for r in restarts[:3])]
    parts += ["", f"torch {e.get('torch') or '?'}"]
    return "\n".join(parts)


def hover_markdown(report: TargetReport, *, stale: bool) -> str:
    if report.kind == "run":
        return run_hover_markdown(report, stale=stale)
    env = report.environment
    risks = sum(
        1 for f in report.findings if f.kind == Kind.RECOMPILE and f.severity == Severity.WARNING
    )
    when = dt.datetime.fromtimestamp(report.measured_at).strftime("%Y-%m-%d %H:%M:%S")
    parts = [
        f"**Dynamo Lens** · `{report.target}`"
        + (" · ⚠ **stale**: the file changed since" if stale else ""),
        "",
        timing_table(report),
        "",
        f"Graphs: **{report.graph_count}** · breaks: **{report.break_count}** · "
        f"recompiles seen: **{report.recompile_count}** · recompile risks: **{risks}**",
        "",
        f"Inputs: {', '.join(f'`{s}`' for s in report.input_shapes) or '—'}",
        f"torch {env.get('torch', '?')} · backend `{env.get('backend', '?')}` · mode "
        f"`{env.get('mode', '?')}` · dynamic `{env.get('dynamic')}` · measured {when}"
        + (f" · {report.timings[0].threads} CPU thread(s)" if report.timings else ""),
    ]
    if any(t.small_inputs for t in report.timings):
        parts.append(
            "",
        )
        parts.append(
            "_These inputs are small: per-call overhead dominates, so the timings do not predict "
            "real workloads. Use realistic shapes in `compile_example` for meaningful numbers._"
        )
    parts += compile_time_rows(env.get("compile_time"))
    if report.guess:
        parts += ["", "_Zero-config guess: inputs inferred from the first layer, not declared._"]
    return "\n".join(parts)


def compile_time_rows(cost: object, top: int = 5) -> list[str]:
    """The hover's table of where Dynamo's compile time went, costliest first."""
    if not isinstance(cost, dict) or not cost.get("functions"):
        return []
    rows = [
        "",
        f"Dynamo compile time **{cost.get('total', 0.0):.2f} s** by compiled function "
        "(costliest first):",
        "",
        "| function | where | Dynamo |",
        "|---|---|---|",
    ]
    for f in cost["functions"][:top]:
        where = f"{os.path.basename(f['path'])}:{f['line']}"
        rows.append(f"| `{f['name']}` | {where} | {f['seconds']:.2f} s |")
    # The check skips it (worker/torchcompat.py): a real run's compile takes that much longer.
    rows += ["", "_Without the guard-latency profile torch runs after each frame's compile._"]
    return rows


def benchmark_result(report: TargetReport, uri: str) -> dict[str, Any]:
    """The ``benchmark`` command's answer (docs/lsp-contract.md): rows, table, environment."""
    rows = timing_rows(report)
    env = report.environment
    return {
        "target": report.target,
        "uri": uri,
        "environment": {k: env.get(k) for k in ("torch", "python", "backend", "mode", "dynamic")},
        "input_shapes": report.input_shapes,
        "small_inputs": any(r["small_inputs"] for r in rows),
        "rows": rows,
        "markdown": timing_table(report),
    }
