"""The rule family fixes/calls.py: a logger call run only in eager, a disabled helper that
only computes traced non-strictly. Where each rule proposes, and where it declines."""

from __future__ import annotations

import pytest
from support.fix_cases import Case, RuleCases, check_family

LOG = """import logging

import torch

logger = logging.getLogger(__name__)


def f(x, log):
    logger.debug("step %s", x.shape)
    log.debug("step")
    return x * 2
"""

HELPER = """import torch

STATS = []


@torch.compiler.disable
def stats(name, t):
    m = t.mean()
    return {name: (m, t.std())}


@torch.compiler.disable
def keep(t):
    STATS.append(t.mean())
    return t


def f(x):
    stats("h", x)
    keep(x)
    return x
"""

CASES: RuleCases = {
    "guard-output": (
        [Case(LOG, "logger.debug")],
        [Case(LOG, "return x * 2")],  # not an output
    ),
    "nonstrict-trace": (
        [Case(HELPER, 'stats("h"')],
        [Case(HELPER, "keep(x)")],  # a side effect non-strict tracing would run once
    ),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_rule_proposes_on_its_pattern_and_declines_near_it(code: str) -> None:
    check_family(CASES, code)
