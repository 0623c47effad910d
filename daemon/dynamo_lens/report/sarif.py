"""SARIF 2.1.0 as GitHub code scanning accepts it: one run, rules per kind or graph-break id."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..findings import FileResult, Finding, FixData, Severity
from ..version import __version__
from .fingerprint import VERSION as FINGERPRINT

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFORMATION: "note",
    Severity.HINT: "note",
}


def _rule_id(f: Finding) -> str:
    return f.gb_id or f"dynamo-lens/{f.kind.value}"


def _artifact(path: str, root: Path) -> dict[str, str]:
    """Workspace files relative to %SRCROOT%; a library file by its absolute URI."""
    try:
        rel = Path(os.path.relpath(path, root))
    except ValueError:
        rel = None
    if rel is None or rel.parts[:1] == ("..",):
        return {"uri": Path(path).as_uri()}
    return {"uri": rel.as_posix(), "uriBaseId": "%SRCROOT%"}


def _location(
    path: str,
    line: int,
    col: int,
    end_line: int,
    end_col: int,
    root: Path,
    cell: int | None = None,
) -> dict[str, Any]:
    region: dict[str, Any] = {
        "startLine": line,
        "startColumn": max(col, 1),
        "endLine": max(end_line, line),
        "endColumn": max(end_col, col + 1),
    }
    if cell is not None:
        # A notebook is the artifact; its lines are the cell's (1-based among all cells).
        region["properties"] = {"cell": cell}
    return {"physicalLocation": {"artifactLocation": _artifact(path, root), "region": region}}


def _fix(fix: FixData, root: Path) -> dict[str, Any]:
    """A SARIF fix: the whole lines replaced, from the start of the first to the start of the
    line after the last."""
    state = {None: "not verified", True: "verified", False: "rejected"}[fix.get("verified")]
    shown = ", ".join(c["name"] for c in fix.get("checks", []) if c.get("ok"))
    text = (
        f"{fix.get('title', '')} ({state}"
        + (f", {fix['claim']}" if fix.get("verified") and fix.get("claim") else "")
        + (f": {shown}" if shown and fix.get("verified") else "")
        + ")"
    )
    return {
        "description": {"text": text},
        "artifactChanges": [
            {
                "artifactLocation": _artifact(fix.get("path", ""), root),
                "replacements": [
                    {
                        "deletedRegion": {
                            "startLine": fix.get("start", 1),
                            "startColumn": 1,
                            "endLine": fix.get("end", 1) + 1,
                            "endColumn": 1,
                        },
                        "insertedContent": {"text": fix.get("text", "")},
                    }
                ],
            }
        ],
    }


def document(results: list[FileResult], root: Path) -> dict[str, Any]:
    rules: dict[str, dict[str, Any]] = {}
    out_results = []
    for res in results:
        for f in res.all_findings():
            rid = _rule_id(f)
            if rid not in rules:
                rule: dict[str, Any] = {
                    "id": rid,
                    "name": (f.data.get("gb_type") or f.kind.value).replace(" ", "_")[:100],
                    "shortDescription": {"text": f.data.get("gb_type") or f.kind.value},
                    "defaultConfiguration": {"level": _LEVEL[f.severity]},
                }
                if f.doc_url:
                    rule["helpUri"] = f.doc_url
                rules[rid] = rule
            r: dict[str, Any] = {
                "ruleId": rid,
                "level": _LEVEL[f.severity],
                "message": {"text": f.text + (f"\n{f.explanation}" if f.explanation else "")},
                "locations": [
                    _location(f.path, f.line, f.column, f.end_line, f.end_column, root, f.cell)
                ],
                "properties": {"kind": f.kind.value, "target": f.target, "device": f.device},
            }
            if f.fingerprint:
                # Code scanning tracks an alert across commits by these, not by its line.
                r["partialFingerprints"] = {FINGERPRINT: f.fingerprint}
            if f.baseline:
                r["baselineState"] = "unchanged" if f.baseline == "known" else "new"
            if related := f.related():
                r["relatedLocations"] = [
                    {
                        **_location(fr.path, *fr.span(), root, fr.cell),
                        "id": i,
                        "message": {"text": label},
                    }
                    for i, (fr, label) in enumerate(related)
                ]
            if f.data.get("fixes"):
                r["fixes"] = [_fix(x, root) for x in f.data["fixes"]]
            out_results.append(r)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "dynamo-lens",
                        "version": __version__,
                        "informationUri": "https://github.com/dynamo-lens/dynamo-lens",
                        "rules": list(rules.values()),
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": root.resolve().as_uri() + "/"}},
                "results": out_results,
            }
        ],
    }


def render(results: list[FileResult], root: Path) -> str:
    return json.dumps(document(results, root), indent=2)
