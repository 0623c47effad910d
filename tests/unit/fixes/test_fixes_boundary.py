"""The rule family fixes/boundary.py: a loop in the user's code that breaks runs in Python, and
torch compiles what each step calls. Where the rule proposes, and where it declines."""

from __future__ import annotations

import pytest
from dynamo_lens.findings import Kind
from dynamo_lens.fixes.catalogue import propose
from support.fix_cases import Case, RuleCases, check_family

DECODE = """import torch
from torch import nn


class Decode(nn.Module):
    def __init__(self, step):
        super().__init__()
        self.step = step

    def forward(self, h):
        out = []
        for _ in range(5):
            h = self.step(h)
            out.append(h)
            if h.norm() < 0.1:
                break
        return torch.stack(out)
"""

DISABLED = "    @torch.compiler.disable\n    def forward"
HEAD = """

class Head(nn.Module):
    def __init__(self, step):
        super().__init__()
        self.decode = Decode(step)

    def forward(self, h):
        return self.decode(h) * 2
"""

CASES: RuleCases = {
    "compile-step": (
        [Case(DECODE, "if h.norm()"), Case(DECODE, "if h.norm()", kind=Kind.FALLBACK)],
        [
            # nothing but tensor ops each step: nothing left to compile
            Case(DECODE.replace("h = self.step(h)", "h = torch.tanh(h)"), "if h.norm()"),
            # a break in a library's loop: its frames would be compiled, breaks and all
            Case(DECODE, "if h.norm()", data=(("library", "transformers/generation.py:3"),)),
            # already kept out of the graph
            Case(DECODE.replace("    def forward", DISABLED), "if h.norm()"),
            # held by another module of the file: compiled whole from there, it would now stop
            Case(DECODE + HEAD, "if h.norm()"),
        ],
    ),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_rule_proposes_on_its_pattern_and_declines_near_it(code: str) -> None:
    check_family(CASES, code)


def test_the_decorator_goes_above_the_functions_own_decorators_and_keeps_its_line() -> None:
    src = DECODE.replace("    def forward", "    @some_marker\n    def forward")
    case = Case(src, "if h.norm()")
    (rw,) = [r for r in propose(case.finding(), src, in_workspace=True) if r.rule == "compile-step"]
    marker = src.splitlines().index("    @some_marker") + 1
    assert (rw.start, rw.end) == (marker, marker) and rw.moves_boundary and rw.exact
    assert rw.text == "    @torch.compiler.disable(recursive=False)\n    @some_marker\n"
    assert rw.new_line(marker) == marker + 1  # the kept line moved down by one
