"""The CLI's JSON document, version 1: environment, targets and a flat list of findings."""

from __future__ import annotations

import json
from typing import Any

from ..findings import FileResult, to_wire

VERSION = 1


def document(results: list[FileResult], environment: dict[str, Any]) -> dict[str, Any]:
    targets = []
    findings = []
    for res in results:
        findings += to_wire(res.findings)
        for rep in res.reports:
            d = to_wire(rep)
            findings += d.pop("findings")
            targets.append(d)
    return {
        "version": VERSION,
        "environment": environment,
        "targets": targets,
        "findings": findings,
    }


def render(results: list[FileResult], environment: dict[str, Any]) -> str:
    return json.dumps(document(results, environment), indent=2, sort_keys=False)
