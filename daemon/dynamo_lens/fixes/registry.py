"""The catalogue's registry: every rule is one function of an ``At`` (the finding, its file's
text and syntax tree, the statement at its line) registered with ``@fix``, the way static's
checks register with ``@check``. What a rule is for (the kinds of finding), the order rules are
tried in and how its rewrite is verified (module-wide, selecting) are said once, here, beside
the rule; ``catalogue.propose`` reads nothing else. Torch-free.

A rule family is one module of this package (``branches``, ``calls``, ``settings``...);
importing ``catalogue`` imports them all. tests/unit/fixes/ holds, per family, the cases that
show each of its rules proposing and declining, and a test that every registered rule has both.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..findings import Finding, Kind

# What a rule can be for: a graph break, a frame torch then runs eagerly (a break in a loop
# makes torch skip the whole frame: the break's line is still the cause), a recompile.
BREAKS = frozenset({Kind.GRAPH_BREAK, Kind.FALLBACK})
RECOMPILES = frozenset({Kind.RECOMPILE})
FIXABLE = BREAKS | RECOMPILES


@dataclass(frozen=True)
class At:
    """Where a rule looks: the finding, the text of the file it sits in (never another), its
    syntax tree, and the statement at the finding's line (None where no statement starts or
    spans there)."""

    finding: Finding
    source: str
    tree: ast.Module
    node: ast.stmt | None
    # ``torch.compile``'s arguments for the workspace's settings (``backend='eager'``; "" for
    # torch's defaults): for a rule that writes a compile of its own (boundary.compile-model).
    compile_args: str = ""

    @property
    def path(self) -> str:
        return self.finding.path

    @property
    def stmt(self) -> ast.stmt:
        """The statement at the line, for rules registered with ``statement=True`` (the
        catalogue calls them only where there is one)."""
        if self.node is None:
            raise LookupError(f"no statement at {self.path}:{self.finding.line}")
        return self.node


# A rule returns the catalogue's ``Rewrite`` (fixes/rewrite.py) or None where its pattern does
# not hold. ``Any``: rewrite.py reads the flags below, so this module cannot import it back.
RuleFn = Callable[[At], Any]


@dataclass(frozen=True)
class FixRule:
    code: str  # the rewrite's ``rule``: in titles, verdicts, the bench's tables
    kinds: frozenset[Kind]  # the findings it is tried for
    fn: RuleFn
    rank: int  # lower is tried (and offered) first
    statement: bool  # reads the statement at the finding's line: tried only where there is one
    module_wide: bool  # a setting at import: verified against every target of the file
    # Evaluates what the original skipped (both arms of a selection, the iterations after a
    # loop's exit) or raises elsewhere than it did: equal outputs on the example's path are
    # not enough, verification runs inputs that take each path.
    selecting: bool
    # Rewrites the example's calls (a dimension marked dynamic, a number passed as a tensor):
    # the rewrite runs on the calls its own example builds, compared with the original's.
    edits_calls: bool
    # Moves the compile boundary (a loop runs in Python, its step is compiled): verified by no
    # frame compiling again step after step, rather than no more recompiles than the original,
    # whose frame torch skipped whole and so never recompiled.
    moves_boundary: bool


RULES: dict[str, FixRule] = {}


def fix(
    code: str,
    kinds: frozenset[Kind],
    *,
    rank: int,
    statement: bool = False,
    module_wide: bool = False,
    selecting: bool = False,
    edits_calls: bool = False,
    moves_boundary: bool = False,
) -> Callable[[RuleFn], RuleFn]:
    """Register the decorated function as the catalogue's rule ``code``."""

    def register(fn: RuleFn) -> RuleFn:
        if code in RULES:
            raise ValueError(f"fix rule {code!r} registered twice")
        if not kinds or not kinds <= FIXABLE:
            raise ValueError(f"fix rule {code!r}: kinds must be some of {sorted(FIXABLE)}")
        RULES[code] = FixRule(
            code,
            kinds,
            fn,
            rank,
            statement,
            module_wide,
            selecting,
            edits_calls,
            moves_boundary,
        )
        return fn

    return register


def ordered() -> list[FixRule]:
    """Every registered rule, in the order they are tried."""
    return sorted(RULES.values(), key=lambda r: (r.rank, r.code))
