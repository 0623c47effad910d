"""The rule family fixes/deferred.py: a literal print, warning or log record said from inside
the graph through a custom op. Where each rule proposes, and where it declines."""

from __future__ import annotations

import pytest
from support.fix_cases import Case, RuleCases, check_family

PRINT = 'import torch\n\n\ndef f(x):\n    print("here")\n    return x + 1\n'

WARN = 'import warnings\n\nimport torch\n\n\ndef f(x):\n    warnings.warn("w")\n    return x\n'

LOG = """import logging

import torch

logger = logging.getLogger(__name__)


def f(x):
    logger.warning("sdpa cannot return weights")
    return x * 2
"""

CASES: RuleCases = {
    "defer-output": (
        [
            Case(PRINT, "print("),
            Case(
                PRINT.replace('print("here")', 'warnings.warn("w")').replace(
                    "import torch", "import warnings\n\nimport torch"
                ),
                "warnings.warn",
            ),
        ],
        [Case(PRINT.replace('print("here")', "print(x.shape)"), "print(")],  # not a literal
    ),
    "defer-log": (
        [Case(LOG, "logger.warning")],
        # a logger the file does not bind at its top level
        [
            Case(
                LOG.replace("logger = logging.getLogger(__name__)", "logger = make()"),
                "logger.warning",
            )
        ],
    ),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_rule_proposes_on_its_pattern_and_declines_near_it(code: str) -> None:
    check_family(CASES, code)
