"""The rule family fixes/boundary.py: a loop in the user's code that breaks runs in Python, and
torch compiles what each step calls; a module that breaks inside the library's ``generate()``
runs it in Python, and the model it holds is compiled. Where the rules propose, and where they
decline."""

from __future__ import annotations

import ast
import dataclasses

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
RUN = "import torch\n\n\ndef run(model, ids):\n    return model.generate(ids)\n"
ELSEWHERE = (Frame("/ws/m.py", 11, "forward"), Frame("/site/torch/functional.py", 9, "norm"))

CASES: RuleCases = {
    "compile-model": (
        [
            Case(GENERATE, AT, data=LIBRARY),
            Case(GENERATE, AT, data=LIBRARY, stack=THROUGH),
            Case(GENERATE, AT, kind=Kind.FALLBACK, data=LIBRARY),
            # a plain function that calls generate() on the model it is given
            Case(RUN, "model.generate", data=LIBRARY),
        ],
        [
            # a break of the user's own code at that line: not the library's loop
            Case(GENERATE, AT),
            # the library frames are not generate()'s
            Case(GENERATE, AT, data=LIBRARY, stack=ELSEWHERE),
            # another method than the library's loop
            Case(GENERATE.replace(".generate(", ".forward("), "self.model.forward", data=LIBRARY),
            # the method also runs a submodule: kept out of the graph with it, uncompiled
            Case(
                GENERATE.replace(
                    "return self.model.generate(ids,",
                    "ids = self.enc(ids)\n        return self.model.generate(ids,",
                ),
                AT,
                data=LIBRARY,
            ),
            # a statement that is not the call's own line (a one-line ``if``)
            Case(
                GENERATE.replace("return self.model", "if ids is not None: return self.model"),
                AT,
                data=LIBRARY,
            ),
            # already kept out of the graph
            Case(GENERATE.replace("    def forward", DISABLED), AT, data=LIBRARY),
            # held by another module of the file: compiled whole from there, it would now stop
            Case(GENERATE + HEAD.replace("Decode(step)", "Generate(step)"), AT, data=LIBRARY),
            # a class of the user's own under the helper's name
            Case(GENERATE + "\n\nclass _CompiledSteps:\n    pass\n", AT, data=LIBRARY),
            # torch imported under another name: the helper needs ``torch``
            Case(GENERATE.replace("import torch\n", "import torch as th\n"), AT, data=LIBRARY),
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


def test_the_steps_are_compiled_only_while_generate_runs_with_the_workspace_settings() -> None:
    case = Case(GENERATE, AT, data=LIBRARY)
    args = compile_arguments("eager", "default", None)
    (rw,) = [r for r in propose(case.finding(), GENERATE, True, args) if r.rule == "compile-model"]
    after = rw.apply(GENERATE)
    ast.parse(after)
    assert "\nclass _CompiledSteps:\n" in after  # once, after the imports
    assert "        self.model = model  # the language model\n" in after  # __init__ untouched
    assert (
        "    @torch.compiler.disable\n    def forward(self, ids):\n"
        "        with _CompiledSteps(self.model, backend='eager'):\n"
        "            return self.model.generate(ids, max_new_tokens=3, do_sample=False)\n"
    ) in after
    assert rw.moves_boundary and rw.module_wide and not rw.exact
    assert rw.boundary == "Generate.forward"
    # The lines between the imports and the call keep their text, moved down.
    lines, new = GENERATE.splitlines(), after.splitlines()
    define = lines.index("    def forward(self, ids):") + 1
    assert new[rw.new_line(define) - 1] == lines[define - 1]
    # A second break of the same file: the helper is there already, not added twice.
    again = [r for r in propose(case.finding(), after, True, args) if r.rule == "compile-model"]
    assert again == []  # the method is disabled now


def test_compile_arguments_leave_torchs_defaults_out() -> None:
    assert compile_arguments("inductor", "default", None) == ""
    assert compile_arguments("eager", "default", None) == "backend='eager'"
    got = compile_arguments("inductor", "max-autotune", False)
    assert got == "mode='max-autotune', dynamic=False"


def test_a_second_module_of_the_file_uses_the_helper_already_there() -> None:
    two = GENERATE + "\n\n" + GENERATE.split("\n\n\n", 1)[1].replace("Generate", "Sample")
    args = compile_arguments("eager", "default", None)
    first = Case(two, AT, data=LIBRARY).finding()
    (rw,) = [r for r in propose(first, two, True, args) if r.rule == "compile-model"]
    after = rw.apply(two)
    line = [i for i, ln in enumerate(after.splitlines(), 1) if AT in ln][-1]
    second = dataclasses.replace(first, line=line)
    (rw2,) = [r for r in propose(second, after, True, args) if r.rule == "compile-model"]
    done = rw2.apply(after)
    assert done.count("class _CompiledSteps:") == 1 and rw2.boundary == "Sample.forward"
    assert done.count("with _CompiledSteps(self.model, backend='eager'):") == 2
    ast.parse(done)


def test_a_plain_function_is_named_as_torch_names_it() -> None:
    (rw,) = [
        r
        for r in propose(Case(RUN, "model.generate", data=LIBRARY).finding(), RUN, True, "")
        if r.rule == "compile-model"
    ]
    assert rw.boundary == "run"
    assert "    with _CompiledSteps(model):\n        return model.generate(ids)\n" in rw.apply(RUN)


AGENT = '''import random

import torch
from torch import nn


class Agent(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        self.rnn = nn.GRU(4, 4)

    def forward(self, state):
        """Epsilon-greedy: the host draws."""
        sample = random.random()
        if sample > 0.1:
            return self.q(state).argmax(1)
        return torch.tensor([random.randrange(3)])


class LayerDrop(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
        self.rnn = nn.LSTM(4, 4)

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            if torch.rand(1).item() < 0.2:
                continue
            x = torch.relu(layer(x))
        out, _ = self.rnn(x)
        return out
'''


def _compile_step(src: str, at: str) -> str:
    (rw,) = [
        r
        for r in propose(Case(src, at).finding(), src, True, "backend='eager'")
        if r.rule == "compile-step"
    ]
    assert rw.moves_boundary and rw.module_wide and not rw.exact  # compiled: within tolerance
    after = rw.apply(src)
    ast.parse(after)
    # Every line of the original is in the result, but those whose calls go through the helper.
    for line in src.splitlines():
        assert line in after.splitlines() or "self.q(" in line or "layer(" in line, line
    # The lines kept say where they went.
    for old, new in rw.kept:
        assert after.splitlines()[new - 1] == src.splitlines()[old - 1]
    return after


def test_calls_of_torchs_own_modules_go_through_a_function_torch_compiles() -> None:
    """A layer drop decided on the host, in a loop over a ModuleList: torch never compiles
    ``nn.Linear`` as a frame of its own, so each call of a module the loop makes goes through
    ``_compiled_step``, where it reads the module as the original did; every other line stays
    as it was, and a recurrent module (torch does not trace it) is called as before."""
    after = _compile_step(AGENT, "if torch.rand(1)")
    assert after.count("def _compiled_step(") == 1
    assert (
        "    @torch.compiler.disable(recursive=False)\n    def forward(self, x):\n"
        "        for i, layer in enumerate(self.layers):\n"
    ) in after
    assert "            x = torch.relu(_compiled_step(layer)(x))\n" in after
    assert "        out, _ = self.rnn(x)\n" in after


def test_the_helper_is_followed_by_two_blank_lines_as_pep_8_asks() -> None:
    """A module-level line one blank line below the imports: after the helper, torch's
    definition, it gets the two blank lines PEP 8 asks for (ruff's E305), and keeps its
    text; where the file has more, none is added."""
    src = AGENT.replace("from torch import nn\n", "from torch import nn\n\nLIMIT = 3\n", 1)
    after = _compile_step(src, "if torch.rand(1)")
    assert "        return module\n" in after
    assert ")\n\n\nLIMIT = 3\n\n\nclass Agent" in after
    spaced = _compile_step(AGENT, "if torch.rand(1)")
    assert "(call, module)\n\n\nclass Agent(nn.Module):" in spaced


def test_outside_a_loop_the_function_keeps_being_compiled() -> None:
    """torch compiles a function up to a break outside a loop and resumes after it: kept out of
    the graph, its own tensor work would run uncompiled (the second hostile review measured a
    model 4x slower for a label read from a Python table on its last line)."""
    for at in ("sample = random.random()", "if sample > 0.1"):
        got = [
            r
            for r in propose(Case(AGENT, at).finding(), AGENT, True, "")
            if r.rule == "compile-step"
        ]
        assert got == [], at
    # Descriptors and generators: the decorator would wrap a property, or torch skips it whole.
    for deco in ("@property", "@functools.cached_property", "@staticmethod"):
        src = AGENT.replace("    def forward(self, x):", f"    {deco}\n    def forward(self, x):")
        assert [
            r
            for r in propose(Case(src, "if torch.rand(1)").finding(), src, True, "")
            if r.rule == "compile-step"
        ] == [], deco
    gen = AGENT.replace("        return out\n", "        yield out\n")
    assert [
        r
        for r in propose(Case(gen, "if torch.rand(1)").finding(), gen, True, "")
        if r.rule == "compile-step"
    ] == []
