"""The rule families that select between paths: fixes/branches.py (a branch on a tensor as
``torch.where``), fixes/swaps.py (one call, its argument selected), fixes/checks.py (a check
kept in the graph), fixes/loops.py (a loop's tensor exit). Where each rule proposes, and where
it declines."""

from __future__ import annotations

import pytest
from support.fix_cases import Case, RuleCases, check_family

BRANCH = """import torch


def f(x):
    h = x + 1
    if h.sum() > 0:
        h = h * 2
    return h
"""

ROPE = """import torch
from torch import nn


class Rope(nn.Module):
    def forward(self, x, position_ids):
        if torch.max(position_ids) + 1 > self.original_max:
            self.register_buffer("inv_freq", self.long_inv_freq, persistent=False)
        else:
            self.register_buffer("inv_freq", self.original_inv_freq, persistent=False)
        return x * self.inv_freq
"""

CHECK = (
    'import torch\n\n\ndef g(h):\n    assert not torch.isnan(h).any(), "NaN in h"\n    return h\n'
)

LOOP = """import torch


def solve(w, x, tol, n):
    z = torch.zeros_like(x)
    for _ in range(n):
        z_next = torch.tanh(z @ w + x)
        if (z_next - z).norm() < tol:
            break
        z = z_next
    return z
"""

CASES: RuleCases = {
    "torch-where": (
        [Case(BRANCH, "if h.sum()")],
        # an arm that writes in place: both arms would run, so the write would too
        [Case(BRANCH.replace("h = h * 2", "h = h.add_(2)"), "if h.sum()")],
    ),
    "select-argument": (
        [Case(ROPE, "if torch.max")],
        [
            Case(
                ROPE.replace('("inv_freq", self.original', '("freq", self.original'), "if torch.max"
            )
        ],
    ),
    "check-in-graph": (
        [Case(CHECK, "assert not")],
        [Case(CHECK.replace('"NaN in h"', 'f"bad {h.shape}"'), "assert not")],  # built at run time
    ),
    "loop-exit": (
        [Case(LOOP, "if (z_next")],
        [Case(LOOP.replace("return z\n", "return z, z_next\n"), "if (z_next")],  # read after
    ),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_rule_proposes_on_its_pattern_and_declines_near_it(code: str) -> None:
    check_family(CASES, code)
