"""The rule family fixes/deferred.py: a literal print, warning or log record said from inside
the graph through a custom op. Where each rule proposes, and where it declines."""

from __future__ import annotations

import pytest
from dynamo_lens.fixes.catalogue import propose
from support.fix_cases import Case, RuleCases, break_at, check_family

PRINT = 'import torch\n\n\ndef f(x):\n    print("here")\n    return x + 1\n'

WARN = 'import warnings\n\nimport torch\n\n\ndef f(x):\n    warnings.warn("w")\n    return x\n'

LOG = """import logging

import torch

logger = logging.getLogger(__name__)


def f(x):
    logger.warning("sdpa cannot return weights")
    return x * 2
"""

IF_LOG = LOG.replace(
    '    logger.warning("sdpa cannot return weights")',
    '    if 0 in x[:, [-1, 0]]:  # padding?\n        logger.warning("pass a mask")',
)
IF_PRINT = PRINT.replace('    print("here")', '    if x.sum() > 0:\n        print("positive")')

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
        [
            # a tensor's values: printed compiled, without the gradient it shows in eager
            Case(PRINT.replace('print("here")', "print(x.sum())"), "print("),
            Case(PRINT.replace('print("here")', 'print(f"{x.shape[-1]}")'), "print("),  # a key
            Case(PRINT.replace('print("here")', 'print(x.shape, end="")'), "print("),
            Case(PRINT.replace('print("here")', 'print(f"{x.requires_grad}")'), "print("),
        ],
    ),
    "output-if": (
        [Case(IF_LOG, "if 0 in"), Case(IF_PRINT, "if x.sum()")],
        [
            Case(IF_PRINT.replace('print("positive")', "print(x)"), "if x.sum()"),  # a value
            Case(IF_PRINT + "    else:\n        pass\n", "if x.sum()"),  # an else
            # ``in`` read the other way round: only where both sides only read
            Case(IF_PRINT.replace("if x.sum() > 0", "if next(x) in x"), "if next"),
            # a list the code writes: Python's ``in``, not a tensor's
            Case(IF_PRINT.replace("if x.sum() > 0", "if x in [0, 1]"), "if x in"),
            Case(IF_PRINT.replace('print("positive")', 'y = 1\n        print("p")'), "if x.sum"),
        ],
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


def test_a_print_of_what_tensors_are_is_made_from_the_real_tensors() -> None:
    src = PRINT.replace(
        'print("here")', 'print("h:", x.shape, f"{x.dtype!r} {x.shape[1]:>4} {{}}")'
    )
    (rw,) = [r for r in propose(break_at(src, "print("), src, True) if r.rule == "defer-output"]
    text = rw.apply(src)
    template = "h: {0.shape} {0.dtype!r} {0.shape[1]:>4} {{}}"
    assert f"    _print_in_graph({template!r}, [x])\n" in text
    assert text.count("_print_in_graph = torch.ops.dynamo_lens.print_with") == 1
    # The template says what print said (the op formats it where the graph runs).
    shape, dtype = (2, 3), "torch.float32"

    class T:
        pass

    t = T()
    t.shape, t.dtype = shape, dtype  # type: ignore[attr-defined]
    expected = f"h: {shape} {dtype!r} {shape[1]:>4} {{}}"
    assert template.format(t) == expected


def test_output_under_a_tensor_test_is_said_where_the_test_holds() -> None:
    (rw,) = [r for r in propose(break_at(IF_LOG, "if 0 in"), IF_LOG, True) if r.rule == "output-if"]
    text = rw.apply(IF_LOG)
    line = "    _log_if_in_graph((x[:, [-1, 0]] == 0).any(), __name__, 'warning', 'pass a mask')"
    assert line + "  # padding?\n" in text, text
    assert rw.branch == break_at(IF_LOG, "if 0 in").line  # verified over inputs taking each path
    not_in = IF_LOG.replace("if 0 in", "if 0 not in")
    (rw,) = [
        r for r in propose(break_at(not_in, "if 0 not"), not_in, True) if r.rule == "output-if"
    ]
    assert "torch.logical_not((x[:, [-1, 0]] == 0).any())" in rw.apply(not_in)
