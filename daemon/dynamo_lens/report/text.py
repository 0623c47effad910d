"""Compiler-style text: ``path:line:col: severity: message [GBxxxx]`` plus a summary."""

from __future__ import annotations

import os
from pathlib import Path

from ..findings import FileResult, Finding


def _rel(path: str, root: Path) -> str:
    try:
        return os.path.relpath(path, root)
    except ValueError:
        return path


def line_for(f: Finding, root: Path) -> str:
    code = f" [{f.gb_id}]" if f.gb_id else ""
    where = f" ({f.device})" if f.device else ""
    known = " (known: in the baseline)" if f.baseline == "known" else ""
    cell = f":cell {f.cell}" if f.cell is not None else ""
    at = f"{_rel(f.path, root)}{cell}:{f.line}:{f.column}"
    return f"{at}: {f.severity.value}: {f.text}{code}{where}{known}"


def compile_time_line(cost: object, root: Path, top: int = 3) -> str:
    """``Dynamo compile 1.31 s, by function: expensive (m.py:44) 1.20 s, ...``, costliest
    first, from a check's ``compile_time`` (worker/compiletime.py)."""
    if not isinstance(cost, dict) or not cost.get("functions"):
        return ""
    fns = cost["functions"]
    parts = [
        f"{f['name']} ({_rel(f['path'], root)}:{f['line']}) {f['seconds']:.2f} s" for f in fns[:top]
    ]
    more = f", {len(fns) - top} more" if len(fns) > top else ""
    return f"Dynamo compile {cost.get('total', 0.0):.2f} s, by function: " + ", ".join(parts) + more


def render(results: list[FileResult], root: Path, verbose: bool = False) -> str:
    out: list[str] = []
    count = 0
    for res in results:
        for f in sorted(res.all_findings(), key=lambda f: (f.path, f.cell or 0, f.line, f.column)):
            count += 1
            out.append(line_for(f, root))
            if verbose:
                if f.explanation:
                    out.append(f"    {f.explanation}")
                out.extend(f"    hint: {h}" for h in f.hints)
                for fr in f.stack[:-1]:
                    cell = f":cell {fr.cell}" if fr.cell is not None else ""
                    out.append(f"    via {_rel(fr.path, root)}{cell}:{fr.line} in {fr.name}")
        for rep in res.reports:
            for t in rep.timings:
                be = (
                    f"breaks even after {t.break_even_calls:.0f} calls"
                    if t.break_even_calls is not None
                    else "never breaks even"
                )
                small = " (inputs too small to predict real use)" if t.small_inputs else ""
                out.append(
                    f"{rep.target} [{t.device}, {t.threads} thread(s)]: "
                    f"eager {t.eager_median * 1e3:.3f} ms ± {t.eager_iqr * 1e3:.3f}, "
                    f"compiled {t.compiled_median * 1e3:.3f} ms ± {t.compiled_iqr * 1e3:.3f}, "
                    f"speedup {t.speedup:.2f}x, cold compile {t.cold_compile:.2f} s, {be}{small}"
                )
            line = compile_time_line(rep.environment.get("compile_time"), root)
            if verbose and line:
                out.append(f"{rep.target}: {line}")
    targets = sum(len(r.reports) for r in results)
    marked = [f.baseline for r in results for f in r.all_findings() if f.baseline]
    against = f" ({marked.count('new')} new, {marked.count('known')} known)" if marked else ""
    out.append(f"{len(results)} file(s), {targets} target(s), {count} finding(s){against}")
    return "\n".join(out)
