"""The rule family fixes/boundary.py: a loop in the user's code that breaks runs in Python, and
torch compiles what each step calls; a module that breaks inside the library's ``generate()``
runs it in Python, and the model it holds is compiled. Where the rules propose, and where they
decline."""

from __future__ import annotations

import pytest
from dynamo_lens.findings import Frame, Kind
from dynamo_lens.fixes.boundary import compile_arguments
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

GENERATE = """import torch
import transformers


class Generate(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model  # the language model

    def forward(self, ids):
        return self.model.generate(ids, max_new_tokens=3, do_sample=False)
"""
AT = "self.model.generate"
LIBRARY = (("library", "transformers/generation/utils.py:2413"),)
THROUGH = (Frame("/ws/m.py", 11, "forward"), Frame("/site/generation/utils.py", 2850, "generate"))
ELSEWHERE = (Frame("/ws/m.py", 11, "forward"), Frame("/site/torch/functional.py", 9, "norm"))

CASES: RuleCases = {
    "compile-model": (
        [
            Case(GENERATE, AT, data=LIBRARY),
            Case(GENERATE, AT, data=LIBRARY, stack=THROUGH),
            Case(GENERATE, AT, kind=Kind.FALLBACK, data=LIBRARY),
        ],
        [
            # a break of the user's own code at that line: not the library's loop
            Case(GENERATE, AT),
            # the library frames are not generate()'s
            Case(GENERATE, AT, data=LIBRARY, stack=ELSEWHERE),
            # another method than the library's loop
            Case(GENERATE.replace(".generate(", ".forward("), "self.model.forward", data=LIBRARY),
            # the model is not one the module stores in __init__
            Case(GENERATE.replace("self.model = model", "self.other = model"), AT, data=LIBRARY),
            # stored on the line of another statement: no line of its own to compile after
            Case(
                GENERATE.replace("self.model = model", "self.model = model; x = 1"),
                AT,
                data=LIBRARY,
            ),
            # already compiled where it is stored
            Case(
                GENERATE.replace(
                    "self.model = model  # the language model",
                    "self.model = model\n        self.model.compile()",
                ),
                AT,
                data=LIBRARY,
            ),
            # already kept out of the graph
            Case(GENERATE.replace("    def forward", DISABLED), AT, data=LIBRARY),
            # held by another module of the file: compiled whole from there, it would now stop
            Case(GENERATE + HEAD.replace("Decode(step)", "Generate(step)"), AT, data=LIBRARY),
            # a plain function: no module that stores the model
            Case(
                "import torch\n\n\ndef run(model, ids):\n    return model.generate(ids)\n",
                "model.generate",
                data=LIBRARY,
            ),
        ],
    ),
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


def test_the_model_is_compiled_where_it_is_stored_with_the_workspace_settings() -> None:
    case = Case(GENERATE, AT, data=LIBRARY)
    args = compile_arguments("eager", "default", None)
    (rw,) = [r for r in propose(case.finding(), GENERATE, True, args) if r.rule == "compile-model"]
    after = rw.apply(GENERATE)
    assert "        self.model = model  # the language model\n" in after
    assert "        self.model.compile(backend='eager')\n" in after
    assert "    @torch.compiler.disable\n    def forward(self, ids):\n" in after
    assert rw.moves_boundary and rw.module_wide and not rw.exact
    assert rw.boundary == "Generate.forward"
    # The lines it keeps: the store in place, the blank line one down, the def two.
    lines = GENERATE.splitlines()
    store = next(i for i, ln in enumerate(lines, 1) if "self.model = model" in ln)
    define = lines.index("    def forward(self, ids):") + 1
    assert lines[store] == ""  # the blank line after the store
    assert rw.new_line(store) == store and rw.new_line(store + 1) == store + 2
    assert rw.new_line(define) == define + 2
    # The break's line (in generate()'s call) is after the rewrite: two lines down.
    call = next(i for i, ln in enumerate(lines, 1) if AT in ln)
    assert rw.new_line(call) == call + 2


def test_compile_arguments_leave_torchs_defaults_out() -> None:
    assert compile_arguments("inductor", "default", None) == ""
    assert compile_arguments("eager", "default", None) == "backend='eager'"
    got = compile_arguments("inductor", "max-autotune", False)
    assert got == "mode='max-autotune', dynamic=False"
