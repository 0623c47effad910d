"""The rule family fixes/effects.py: host work kept to eager, explicit breaks dropped, a 0-d
argmax index kept a tensor. Where each rule proposes, and where it declines."""

from __future__ import annotations

import pytest
from support.fix_cases import Case, RuleCases, check_family

HOST = """import time

import torch


class M(torch.nn.Module):
    def forward(self, x):
        t0 = time.perf_counter()
        y = x * 2
        self.ms = (time.perf_counter() - t0) * 1000
        return y
"""

BREAK = (
    "import torch\n\n\ndef f(x):\n    y = x + 1\n    torch._dynamo.graph_break()\n    return y\n"
)

ARGMAX = """import torch


def pick(x, scores):
    best = scores.argmax()
    return (x + 1)[best]
"""

CASES: RuleCases = {
    "guard-host": (
        [Case(HOST, "t0 = time")],
        # the reading returned: the timer's value reaches the caller
        [Case(HOST.replace("return y", "return y, t0"), "t0 = time")],
    ),
    "drop-break": (
        [Case(BREAK, "graph_break()")],
        [Case(BREAK.replace("torch._dynamo.graph_break()", "y = torch.relu(y)"), "relu")],
    ),
    "tensor-index": (
        [Case(ARGMAX, "return")],
        [Case(ARGMAX.replace("scores.argmax()", "scores.argmax(-1)"), "return")],  # not 0-d
    ),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_rule_proposes_on_its_pattern_and_declines_near_it(code: str) -> None:
    check_family(CASES, code)
