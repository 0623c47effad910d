"""Findings and single rewrites for the fix-catalogue tests, without torch."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from dynamo_lens.findings import Finding, Frame, Kind, Severity
from dynamo_lens.fixes.catalogue import Rewrite, propose


def break_at(src: str, text: str) -> Finding:
    line = next(i for i, ln in enumerate(src.splitlines(), 1) if text in ln)
    return Finding(Kind.GRAPH_BREAK, Severity.WARNING, "/ws/m.py", line, 0, line, 1, "m")


def only_rewrite(src: str, text: str) -> Rewrite:
    (rw,) = propose(break_at(src, text), src, in_workspace=True)
    ast.parse(rw.apply(src))
    return rw


@dataclass(frozen=True)
class Case:
    """A finding on the line of ``source`` holding ``at``, and the file it sits in: a rule's
    positive case proposes its rewrite there, a negative one (the pattern nearly holds) does
    not."""

    source: str
    at: str
    kind: Kind = Kind.GRAPH_BREAK
    hints: tuple[str, ...] = ()
    data: tuple[tuple[str, Any], ...] = ()
    stack: tuple[Frame, ...] = ()
    target: str | None = None

    def finding(self) -> Finding:
        line = next(i for i, ln in enumerate(self.source.splitlines(), 1) if self.at in ln)
        f = Finding(self.kind, Severity.WARNING, "/ws/m.py", line, 0, line, 1, "m")
        f.hints = list(self.hints)
        f.data = dict(self.data)
        f.stack = list(self.stack)
        f.target = self.target
        return f


# Per rule code: (cases where it proposes, cases where it does not).
RuleCases = dict[str, tuple[list[Case], list[Case]]]


def rules_proposed(case: Case) -> list[str]:
    """The codes of what the catalogue proposes for ``case``; each proposal is valid Python."""
    found = propose(case.finding(), case.source, in_workspace=True)
    for rw in found:
        ast.parse(rw.apply(case.source))
    return [rw.rule for rw in found]


def check_family(cases: RuleCases, code: str) -> None:
    """Every positive case of ``code`` proposes it; no negative case does."""
    positive, negative = cases[code]
    for case in positive:
        assert code in rules_proposed(case), (code, case.at, case.source)
    for case in negative:
        assert code not in rules_proposed(case), (code, case.at, case.source)
