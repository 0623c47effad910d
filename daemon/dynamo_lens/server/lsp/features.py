"""Hover, code lens and code actions: what the service knows, as lsprotocol types."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types

from ...findings import Kind, site_code
from ...fixes import quick
from ...fixes.catalogue import FIXABLE
from .. import verdicts
from ..summary import hover_markdown
from .app import CMD, DynamoLensServer
from .convert import code_lens, path_to_uri, rewrite_edit, uri_to_path

# The diagnostics' ``data.kind`` a rewrite can be proposed for.
_FIXABLE = {k.value for k in FIXABLE}


def hover(ls: DynamoLensServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    path = uri_to_path(uri)
    if ls.service is None:
        return None
    if path is not None:
        flagged, report = ls.service.queries.hover(path, params.position.line + 1)
        stale = report is not None and ls.service.queries.is_stale(path, report)
    elif (cell := ls.notebook_cell(uri)) is not None:
        flagged, report, stale = ls.service.notebooks.hover(*cell, params.position.line + 1)
    else:
        return None
    if report is None:
        return None
    parts = [f"**{f.severity.value}**: {f.text}" for f in flagged]
    parts.append(hover_markdown(report, stale=stale))
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n".join(parts))
    )


def lenses(ls: DynamoLensServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    path = uri_to_path(uri)
    if ls.service is None:
        return []
    if path is None and (cell := ls.notebook_cell(uri)) is not None:
        # A cell's targets: the summary only (a benchmark runs a file's target, not a cell's).
        return [code_lens(r, uri)[0] for r, _ in ls.service.notebooks.targets_in(*cell)]
    if path is None:
        return []
    out: list[types.CodeLens] = []
    for r in ls.service.queries.reports_for(path):
        if r.path == path:
            out += code_lens(r, uri)
    return out


def code_actions(ls: DynamoLensServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    text, version = ls.doc_text(uri)
    if uri_to_path(uri) is None and (cell := ls.notebook_cell(uri)) is not None:
        return _cell_actions(ls, uri, cell, text, version, params.context.diagnostics)
    actions: list[types.CodeAction] = []
    for d in params.context.diagnostics:
        if d.source != "dynamo-lens" or not isinstance(d.data, dict):
            continue
        if d.data.get("doc_url"):
            command = types.Command(
                title="Open documentation", command=CMD + "openDocs", arguments=[d.data["doc_url"]]
            )
            actions.append(
                types.CodeAction(
                    title=f"Open the graph-break documentation ({d.code})",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[d],
                    command=command,
                )
            )
        rules: set[str] = set()
        if d.data.get("kind") in _FIXABLE:
            found = _rewrites(ls, uri, text, version, d)
            rules = {rule for rule, _ in found}
            actions += [action for _, action in found]
        md = d.data.get("mark_dynamic")
        # The unverified edit only where the catalogue has no mark-dynamic to verify (the
        # example in another file, the argument passed by keyword).
        if isinstance(md, dict) and "mark-dynamic" not in rules:
            action = _mark_dynamic(ls, d, md)
            if action is not None:
                actions.append(action)
    for name, line in quick.module_classes_without_example(text):
        if params.range.start.line <= line - 1 <= params.range.end.line:
            edit = quick.add_compile_example(text, name)
            if edit is not None:
                actions.append(_edit_action(uri, f"Add a compile_example for {name}", edit))
    return actions


def _cell_actions(
    ls: DynamoLensServer,
    uri: str,
    cell: tuple[str, int],
    text: str,
    version: int | None,
    diagnostics: Sequence[types.Diagnostic],
) -> list[types.CodeAction]:
    """A notebook cell's rewrites: the catalogue's, as edits of the cell, labelled not
    verified (a notebook's rewrite is not run yet), never preferred."""
    if ls.service is None:
        return []
    out = []
    for d in diagnostics:
        if d.source != "dynamo-lens" or not isinstance(d.data, dict):
            continue
        kind = str(d.data.get("kind"))
        if kind not in _FIXABLE:
            continue
        line = d.range.start.line + 1
        for rw in ls.service.notebooks.rewrites(*cell, line, Kind(kind)):
            out.append(
                types.CodeAction(
                    title=f"{rw.title} (not verified: a notebook's rewrites are not run yet)",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[d],
                    edit=rewrite_edit(uri, rw, text, version),
                )
            )
    return out


def _rewrites(
    ls: DynamoLensServer, uri: str, text: str, version: int | None, d: types.Diagnostic
) -> list[tuple[str, types.CodeAction]]:
    """The catalogue's rewrites for a break: applied as verified only with the worker's verdict
    on these bytes (preferred where it holds for every path; an explicit, labelled choice where
    it was equal on the example only); else a command that verifies (and then applies) it, or
    in Restricted Mode the unverified text, never preferred. Every edit is for this version of
    the buffer only."""
    path = uri_to_path(uri)
    if ls.service is None or path is None or not isinstance(d.data, dict):
        return []
    line = d.range.start.line + 1
    target = d.data.get("target")
    gb_type = site_code(str(d.data.get("kind")), d.data.get("gb_type"))
    out = []
    for p in ls.service.verdicts.proposals(path, text, line, target, gb_type):
        rw, verdict = p.rewrite, p.verdict
        edit = rewrite_edit(uri, rw, text, version)
        if verdict is not None and verdict.get("verified"):
            title = f"{rw.title} (verified: {verdicts.shown(verdict)})"
            action = types.CodeAction(
                title=title, edit=edit, is_preferred=verdicts.applicable(verdict)
            )
        elif verdict is not None:
            title = f"{rw.title} (rejected: {verdicts.failed(verdict)})"
            reason = f"Dynamo Lens ran it: {verdicts.failed(verdict)}"
            action = types.CodeAction(title=title, disabled=types.CodeActionDisabled(reason))
        elif not ls.service.trusted:
            title = f"{rw.title} (not verified: Restricted Mode runs no code)"
            action = types.CodeAction(title=title, edit=edit)
        else:
            args = {"uri": uri, "line": line, "target": target, "gbType": gb_type, "rule": rw.rule}
            command = types.Command(title=rw.title, command=CMD + "verifyFix", arguments=[args])
            action = types.CodeAction(title=f"Verify, then apply: {rw.title}", command=command)
        action.kind = types.CodeActionKind.QuickFix
        action.diagnostics = [d]
        out.append((rw.rule, action))
    return out


def _edit_action(uri: str, title: str, edit: quick.Edit) -> types.CodeAction:
    start = types.Position(line=edit.line - 1, character=0)
    end = start if edit.end_line is None else types.Position(line=edit.end_line, character=0)
    text_edit = types.TextEdit(range=types.Range(start=start, end=end), new_text=edit.text)
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        edit=types.WorkspaceEdit(changes={uri: [text_edit]}),
    )


def _mark_dynamic(
    ls: DynamoLensServer, d: types.Diagnostic, md: dict[str, Any]
) -> types.CodeAction | None:
    if ls.service is None or not isinstance(d.data, dict):
        return None
    buffers = {}
    for doc in ls.workspace.text_documents.values():
        path = uri_to_path(doc.uri)
        if path is not None:
            buffers[path] = doc.source
    dim = int(md.get("dim", 0))
    found = ls.service.queries.mark_dynamic_fix(
        d.data.get("target"), str(md.get("variable", "")), dim, buffers
    )
    if found is None:
        return None
    path, edit = found
    title = f"Insert torch._dynamo.mark_dynamic(…, {dim}) at the call site"
    action = _edit_action(path_to_uri(path), title, edit)
    action.diagnostics = [d]
    return action


def register(ls: DynamoLensServer) -> None:
    ls.feature(types.TEXT_DOCUMENT_HOVER)(hover)
    ls.feature(types.TEXT_DOCUMENT_CODE_LENS)(lenses)
    ls.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )(code_actions)
