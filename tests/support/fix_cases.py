"""Findings and single rewrites for the fix-catalogue tests, without torch."""

from __future__ import annotations

import ast

from dynamo_lens.findings import Finding, Kind, Severity
from dynamo_lens.fixes.catalogue import Rewrite, propose


def break_at(src: str, text: str) -> Finding:
    line = next(i for i, ln in enumerate(src.splitlines(), 1) if text in ln)
    return Finding(Kind.GRAPH_BREAK, Severity.WARNING, "/ws/m.py", line, 0, line, 1, "m")


def only_rewrite(src: str, text: str) -> Rewrite:
    (rw,) = propose(break_at(src, text), src, in_workspace=True)
    ast.parse(rw.apply(src))
    return rw
