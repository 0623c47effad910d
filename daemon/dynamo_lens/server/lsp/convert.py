"""Findings and reports to lsprotocol types. Translation only."""

from __future__ import annotations

import os

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from ...findings import Finding, Kind, Severity, TargetReport
from ...fixes.catalogue import Rewrite
from ...report.baseline import KNOWN

SOURCE = "dynamo-lens"
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFORMATION: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}


def uri_to_path(uri: str) -> str | None:
    """The real path of a ``file:`` URI; None for others (untitled buffers, notebook cells)."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return os.path.realpath(path) if path else None


def path_to_uri(path: str) -> str:
    return from_fs_path(os.path.realpath(path)) or path


# LSP positions are uintegers: a line from a hostile or broken trace must not fail a publish.
_UINT = 2**31 - 1


def _pos(line: int, character: int) -> types.Position:
    return types.Position(line=min(max(line, 0), _UINT), character=min(max(character, 0), _UINT))


def lsp_range(line: int, col: int, end_line: int, end_col: int) -> types.Range:
    start = _pos(line - 1, col - 1)
    end = _pos(end_line - 1, end_col - 1)
    if (end.line, end.character) <= (start.line, start.character):
        end = _pos(start.line, start.character + 1)
    return types.Range(start=start, end=end)


def diagnostic(f: Finding) -> types.Diagnostic:
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(
                uri=path_to_uri(fr.path),
                range=lsp_range(*fr.span()),
            ),
            message=label,
        )
        for fr, label in f.related()
    ]
    stale = " (stale: edited since analysed)" if f.data.get("stale") else ""
    # Marked known by the service (server/known.py) only where dynamoLens.knownFindings asks
    # for them as hints: the baseline accepts it, so it is shown below what the checks gate.
    known = f.baseline == KNOWN
    message = f.text + stale + (" (known: in the baseline)" if known else "")
    if f.explanation and (f.is_break or f.kind in (Kind.FALLBACK, Kind.MISMATCH, Kind.ERROR)):
        message += f"\n{f.explanation}"
    if f.hints:
        message += "\nHint: " + f.hints[0]
    return types.Diagnostic(
        range=lsp_range(f.line, f.column, f.end_line, f.end_column),
        message=message,
        severity=types.DiagnosticSeverity.Hint if known else _SEVERITY[f.severity],
        source=SOURCE,
        code=f.gb_id or f.kind.value,
        code_description=types.CodeDescription(href=f.doc_url) if f.doc_url else None,
        related_information=related or None,
        data={
            "kind": f.kind.value,
            "target": f.target,
            "device": f.device,
            **_fix_data(f),
            # "known" or "new" against the workspace's baseline, where the service marked it.
            **({"baseline": f.baseline} if f.baseline else {}),
        },
    )


def _fix_data(f: Finding) -> dict[str, object]:
    out: dict[str, object] = {}
    if f.doc_url:
        out["doc_url"] = f.doc_url
    if "mark_dynamic" in f.data:
        out["mark_dynamic"] = f.data["mark_dynamic"]
    if "gb_type" in f.data:
        out["gb_type"] = f.data["gb_type"]  # with kind and target: which break a fix is for
    return out


def code_lens(report: TargetReport, uri: str) -> list[types.CodeLens]:
    breaks = report.break_count
    risks = sum(
        1 for f in report.findings if f.kind == Kind.RECOMPILE and f.severity == Severity.WARNING
    )
    rng = lsp_range(report.line, 1, report.line, 2)
    title = f"{breaks} graph break{'s' if breaks != 1 else ''} · {risks} recompile risk" + (
        "s" if risks != 1 else ""
    )
    if any(f.kind == Kind.MISMATCH for f in report.findings):
        title += " · ✗ compiled ≠ eager"
    return [
        types.CodeLens(range=rng, command=types.Command(title=title, command="")),
        types.CodeLens(
            range=rng,
            command=types.Command(
                title="▶ Benchmark",
                command="dynamoLens.benchmarkTarget",
                arguments=[uri, report.target],
            ),
        ),
    ]


def rewrite_edit(uri: str, rw: Rewrite, text: str, version: int | None) -> types.WorkspaceEdit:
    """A catalogue rewrite of the buffer ``text`` as whole lines replaced (with the buffer's
    line endings); with ``version``, only for that version of the buffer (the client refuses
    it for any other)."""
    start = types.Position(line=rw.start - 1, character=0)
    end = types.Position(line=rw.end, character=0)
    new_text = rw.replacement(text)
    edit = types.TextEdit(range=types.Range(start=start, end=end), new_text=new_text)
    if version is None:
        return types.WorkspaceEdit(changes={uri: [edit]})
    doc = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
    return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(doc, [edit])])
