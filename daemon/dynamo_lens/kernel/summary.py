"""What a cell's compiles showed, as its output: a line of counts, then one row per finding,
the costliest to compile first; plain text for any front end, an HTML table for notebooks."""

from __future__ import annotations

import html
from dataclasses import dataclass

from ..findings import Finding, Kind
from .cellfindings import CellRun

_KINDS = {
    Kind.GRAPH_BREAK: "graph break",
    Kind.RECOMPILE: "recompile",
    Kind.FALLBACK: "fallback",
    Kind.ERROR: "error",
}


@dataclass(frozen=True)
class Row:
    kind: str
    where: str  # "In [4], line 3", or a file's name and line
    seconds: float | None  # compile time of the frames that broke here, where torch said
    text: str


def rows(runs: list[CellRun]) -> list[Row]:
    out = []
    for run in runs:
        for f in run.findings:
            key = (f.execution_count, f.line, f.gb_id)
            seconds = run.break_seconds.get(key) if f.is_break else None
            code = f" [{f.gb_id}]" if f.gb_id else ""
            out.append(Row(_KINDS.get(f.kind, f.kind.value), _where(f), seconds, f.message + code))
    return sorted(out, key=lambda r: (-(r.seconds or 0.0), r.kind, r.where))


def _where(f: Finding) -> str:
    if f.execution_count is not None:
        return f"In [{f.execution_count}], line {f.line}"
    return f"{f.path.rsplit('/', 1)[-1]}:{f.line}"


def headline(label: str, runs: list[CellRun]) -> str:
    found = [f for r in runs for f in r.findings]
    frames = sum(r.frames_compiled for r in runs)
    seconds = sum(r.compile_seconds for r in runs)

    def count(kind: Kind, word: str) -> str:
        n = sum(1 for f in found if f.kind is kind)
        return f"{n} {word}" + ("" if n == 1 else "s")

    counts = ", ".join(
        [
            count(Kind.GRAPH_BREAK, "graph break"),
            count(Kind.RECOMPILE, "recompile"),
            count(Kind.FALLBACK, "fallback"),
        ]
    )
    return f"dynamo-lens: {label} compiled {frames} frame(s) in {seconds:.2f} s: {counts}"


def text(label: str, runs: list[CellRun]) -> str:
    lines = [headline(label, runs)]
    for r in rows(runs):
        secs = f"{r.seconds:.2f} s" if r.seconds is not None else "-"
        lines.append(f"  {r.kind:<11} {r.where:<18} {secs:>8}  {r.text}")
    return "\n".join(lines)


def table(label: str, runs: list[CellRun]) -> str:
    head = html.escape(headline(label, runs))
    body = "".join(
        "<tr>"
        f"<td>{html.escape(r.kind)}</td><td>{html.escape(r.where)}</td>"
        f"<td style='text-align:right'>{'' if r.seconds is None else f'{r.seconds:.2f} s'}</td>"
        f"<td style='text-align:left'>{html.escape(r.text)}</td>"
        "</tr>"
        for r in rows(runs)
    )
    if not body:
        return f"<div class='dynamo-lens'><b>{head}</b></div>"
    return (
        f"<div class='dynamo-lens'><b>{head}</b><table>"
        "<thead><tr><th>kind</th><th>where</th><th>compile</th><th>finding</th></tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )
