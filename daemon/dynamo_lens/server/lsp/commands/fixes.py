"""The command behind a code action's "Verify, then apply": the worker verifies the
catalogue's rewrite, server/verdicts.py decides, and the edit goes to the buffer it was
proposed for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from ....engine.cancel import CancelToken
from ... import verdicts
from ..app import CMD, DynamoLensServer
from ..convert import rewrite_edit
from .kit import Progress, background, file_path


@dataclass
class VerifyFixArgs:
    uri: str
    line: int  # 1-based line of the break
    target: str
    gbType: str
    rule: str
    workDoneToken: str | int | None = None


def verify_fix(ls: DynamoLensServer, req: VerifyFixArgs) -> dict[str, Any]:
    """The rewrite is the catalogue's for the saved file, never text from the wire."""
    svc = ls.svc()
    path = file_path(req.uri)
    text, version = ls.doc_text(req.uri)
    found = [
        p
        for p in svc.verdicts.proposals(path, text, req.line, req.target, req.gbType)
        if p.rewrite.rule == req.rule
    ]
    if not found:
        name = path.replace("\\", "/").rsplit("/", 1)[-1]
        raise JsonRpcInvalidParams(f"no {req.rule} rewrite for line {req.line} of {name} as saved")
    p = found[0]
    cancel = CancelToken()
    # A code action's command comes without a token: the server makes one to show progress.
    progress = Progress(ls, req.workDoneToken or ls.progress_token("verify-fix"))
    progress.begin("Dynamo Lens: verifying a fix", p.rewrite.title, cancel.cancel)
    try:
        verdict = svc.verdicts.verify(p.rewrite, p.target, p.site, cancel=cancel)
    except BaseException:
        progress.end("failed")
        raise

    def current() -> bool:
        return ls.doc_text(req.uri) == (text, version)

    decision = verdicts.decide(p, verdict, current)
    progress.end(decision.progress)
    if decision.apply is not None and not current():
        # The buffer changed while the progress ended: asked again just before the edit.
        decision = verdicts.decide(p, verdict, lambda: False)
    if decision.say:
        ls.warn(f"Dynamo Lens: {decision.say}")
    if decision.apply is not None:
        edit = rewrite_edit(req.uri, decision.apply, text, version)
        params = types.ApplyWorkspaceEditParams(edit=edit, label=decision.apply.title)
        decision.result["applied"] = ls.apply_edit(params)
    return decision.result


def register(ls: DynamoLensServer) -> None:
    ls.command(CMD + "verifyFix")(background(verify_fix))
