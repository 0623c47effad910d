"""Commands about the workspace's analysis: check a file or the workspace, list targets, the
worker's environment, clear the cache, open a break's documentation."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from ..app import CMD, DynamoLensServer
from ..convert import path_to_uri
from .kit import background, file_path, invalid_params


def check_file(ls: DynamoLensServer, uri: str) -> dict[str, Any]:
    path = file_path(uri)
    svc = ls.svc()
    with invalid_params():
        svc.may_run(path, ls.is_open(uri))
    res = svc.analyses.check_now(path)
    if res is None:
        return {"uri": uri, "targets": 0, "findings": 0, "restricted": True}
    return {"uri": uri, "targets": len(res.reports), "findings": len(res.all_findings())}


def check_workspace(ls: DynamoLensServer) -> dict[str, Any]:
    files, findings = ls.svc().analyses.check_workspace()
    return {"files": files, "findings": findings}


def list_targets(ls: DynamoLensServer, *uris: str) -> list[dict[str, Any]]:
    reports = ls.svc().analyses.targets([file_path(str(u)) for u in uris])
    return [
        {"target": r.target, "uri": path_to_uri(r.path), "line": r.line, "kind": r.kind}
        for r in reports
    ]


def environment(ls: DynamoLensServer) -> dict[str, Any]:
    return ls.svc().queries.environment()


def clear_cache(ls: DynamoLensServer) -> dict[str, Any]:
    return {"removed": ls.svc().ctx.cache.clear()}


def open_docs(ls: DynamoLensServer, url: str) -> None:
    if url.startswith("https://"):
        ls.window_show_document(types.ShowDocumentParams(uri=url, external=True))


def register(ls: DynamoLensServer) -> None:
    ls.command(CMD + "checkFile")(background(check_file))
    ls.command(CMD + "checkWorkspace")(background(check_workspace))
    ls.command(CMD + "listTargets")(background(list_targets))
    ls.command(CMD + "environment")(background(environment))
    ls.command(CMD + "clearCache")(background(clear_cache))
    ls.command(CMD + "openDocs")(open_docs)
