"""The rule families that set something for the user's calls: fixes/settings.py (torch's
documented settings after the imports) and fixes/dynamic.py (a dimension marked dynamic where
the example builds its calls). Where each rule proposes, and where it declines."""

from __future__ import annotations

import pytest
from dynamo_lens.findings import Frame, Kind
from support.fix_cases import Case, RuleCases, check_family

USER = """import torch
from transformers import GPT2LMHeadModel


def compile_example():
    model = GPT2LMHeadModel.from_pretrained("gpt2")
    return model, (torch.zeros(1, 4, dtype=torch.long),)
"""


def _in_library(code: str) -> dict[str, object]:
    return {
        "data": (("library", "transformers/modeling_utils.py:4778"),),
        "stack": (
            Frame("/ws/m.py", 7, "compile_example"),
            Frame("/site-packages/transformers/modeling_utils.py", 4778, "loss", code=code),
        ),
    }


CAPTURE = "Use `torch._dynamo.config.capture_scalar_outputs = True` to capture the value"
UNSPEC = (
    "you might want to make this integer dynamic using "
    "torch._dynamo.config.allow_unspec_int_on_nn_module = True, or convert this integer"
)

ROWS = """import torch
from torch import nn


class Rows(nn.Module):
    def forward(self, x, n):
        return x * n


def compile_example():
    model = Rows()
    return [(model, (torch.randn(k, 8), 2)) for k in (4, 6)]
"""
MARK = (("mark_dynamic", {"variable": "x", "dim": 0, "arg": 0}),)
SCALAR = (("scalar_arg", {"variable": "n", "arg": 1}),)
DECLARED = (("source", "variants"),)
SIZE = (("guard_kind", "size"), ("values", ["4", "6"]), *DECLARED)
INTS = (("guard_kind", "value"), ("values", ["2", "3"]), *DECLARED)
FLOATS = (("guard_kind", "value"), ("values", ["0.5", "2.0"]), *DECLARED)
DTYPE = (("guard_kind", "dtype"), ("values", ["torch.float32", "torch.float64"]), *DECLARED)
DYNAMIC = "torch._dynamo.config.assume_static_by_default = False\n"

CASES: RuleCases = {
    "ignore-logger": (
        [Case(USER, "return model", **_in_library("logger.warning_once("))],  # type: ignore[arg-type]
        [Case(USER, "return model", **_in_library("return torch.nonzero(x)"))],  # type: ignore[arg-type]
    ),
    "capture-setting": (
        [Case(USER, "return model", hints=(CAPTURE,))],
        [Case(USER, "return model", hints=("Consider rewriting the loop",))],
    ),
    "torch-setting": (
        [Case(USER, "return model", kind=Kind.RECOMPILE, hints=(UNSPEC,))],
        # already set: torch still recompiled, so this is not the fix
        [
            Case(
                USER + "torch._dynamo.config.allow_unspec_int_on_nn_module = True\n",
                "return model",
                kind=Kind.RECOMPILE,
                hints=(UNSPEC,),
            )
        ],
    ),
    # what dynamic=True sets, for a size or an int; a dtype or a float value it cannot help
    "dynamic-setting": (
        [
            Case(ROWS, "return x * n", kind=Kind.RECOMPILE, data=SIZE),
            Case(ROWS, "return x * n", kind=Kind.RECOMPILE, data=INTS),
            # a mark the calls cannot take (a guessed target: no call site of the user's)
            Case(ROWS, "return x * n", kind=Kind.RECOMPILE, data=(*SIZE, *MARK), target="Rows"),
        ],
        [
            Case(ROWS, "return x * n", kind=Kind.RECOMPILE, data=DTYPE),
            Case(ROWS, "return x * n", kind=Kind.RECOMPILE, data=FLOATS),
            # found by probing alone: none of the user's calls recompiled
            Case(ROWS, "return x * n", kind=Kind.RECOMPILE, data=(*SIZE[:2], ("source", "probes"))),
            # an input a fix of the calls marks, or passes as a tensor: that fix, not this
            Case(
                ROWS,
                "return x * n",
                kind=Kind.RECOMPILE,
                data=(*SIZE, *MARK),
                target="compile_example",
            ),
            Case(
                ROWS,
                "return x * n",
                kind=Kind.RECOMPILE,
                data=(*INTS, *SCALAR),
                target="compile_example",
            ),
            # already set: torch still recompiled, so this is not the fix
            Case(
                ROWS.replace("from torch import nn\n", "from torch import nn\n" + DYNAMIC),
                "return x * n",
                kind=Kind.RECOMPILE,
                data=SIZE,
            ),
        ],
    ),
    "mark-dynamic": (
        [Case(ROWS, "return x * n", kind=Kind.RECOMPILE, data=MARK, target="compile_example")],
        # a guessed target: no call site of the user's to mark
        [Case(ROWS, "return x * n", kind=Kind.RECOMPILE, data=MARK, target="Rows")],
    ),
    # tried after mark-dynamic, for a size the code singles out: the same call sites
    "maybe-mark-dynamic": (
        [Case(ROWS, "return x * n", kind=Kind.RECOMPILE, data=MARK, target="compile_example")],
        # a guessed target: no call site of the user's to mark
        [Case(ROWS, "return x * n", kind=Kind.RECOMPILE, data=MARK, target="Rows")],
    ),
    "scalar-tensor": (
        [Case(ROWS, "return x * n", kind=Kind.RECOMPILE, data=SCALAR, target="compile_example")],
        [
            # a library's guard: the user's example is not where that number comes from
            Case(
                ROWS,
                "return x * n",
                kind=Kind.RECOMPILE,
                data=(*SCALAR, ("library", "lib.py:3")),
                target="compile_example",
            ),
            # where a tensor would not give what the number gave: a power (2 ** tensor(-1) is
            # 0), a dict's key, a write into it (the caller's tensor), a constant operand
            *(
                Case(
                    ROWS.replace("return x * n", body),
                    body.splitlines()[-1].strip(),
                    kind=Kind.RECOMPILE,
                    data=SCALAR,
                    target="compile_example",
                )
                for body in (
                    "return x * 2**n",
                    "return x * {1: 2.0}.get(n, 1.0)",
                    "n *= 2\n        return x * n",
                    "return x * (n * 2)",
                )
            ),
            # the example returns and then does more on its line: that would be lost
            Case(
                ROWS.replace("for k in (4, 6)]", "for k in (4, 6)]; print(1)"),
                "return x * n",
                kind=Kind.RECOMPILE,
                data=SCALAR,
                target="compile_example",
            ),
        ],
    ),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_rule_proposes_on_its_pattern_and_declines_near_it(code: str) -> None:
    check_family(CASES, code)
