"""The catalogue of rewrites (fixes/catalogue.py), without torch: what each rule proposes, that
every proposal is valid Python, how lines move, and what is refused."""

from __future__ import annotations

import ast

import pytest
from dynamo_lens.findings import Finding, Frame, Kind, Severity
from dynamo_lens.fixes.catalogue import Rewrite, propose
from support.fix_cases import break_at, only_rewrite

SRC = """import logging
import warnings

import torch

logger = logging.getLogger(__name__)


def f(x):
    h = x + 1
    if h.sum() > 0:  # keep me
        h = h * 2
    else:
        h = h - 1
    print("h", h.shape)
    logger.warning("big %s",
                   h.shape)
    warnings.warn("careful")
    a = 1; print(a)
    if h.mean() > 0:
        h = h * 3
        h = h + 1
    return h
"""


def _break(line: int, kind: Kind = Kind.GRAPH_BREAK) -> Finding:
    return Finding(kind, Severity.WARNING, "/ws/m.py", line, 0, line, 1, "m")


def _line(text: str) -> int:
    return next(i for i, ln in enumerate(SRC.splitlines(), 1) if text in ln)


def test_a_branch_assigning_one_name_becomes_torch_where_keeping_its_comment() -> None:
    (rw,) = propose(_break(_line("if h.sum()")), SRC, in_workspace=True)
    assert rw.rule == "torch-where" and rw.exact
    assert rw.text == "    h = torch.where(h.sum() > 0, h * 2, h - 1)  # keep me\n"
    assert (rw.start, rw.end) == (_line("if h.sum()"), _line("h = h - 1"))
    ast.parse(rw.apply(SRC))


def test_a_logger_call_is_guarded_and_a_literal_warning_is_said_from_the_graph() -> None:
    (rw,) = propose(_break(_line("logger.warning")), SRC, in_workspace=True)
    assert rw.rule == "guard-output"
    assert rw.text.splitlines()[0] == "    if not torch.compiler.is_compiling():"
    assert (rw.start, rw.end) == (_line("logger.warning"), _line("logger.warning") + 1)
    new = rw.apply(SRC)
    ast.parse(new)
    assert new.count("is_compiling") == 1
    # A warning (a literal) is warned by a custom op where the graph runs; not torch's
    # process-wide reorderable functions.
    (rw,) = propose(_break(_line("warnings.warn")), SRC, in_workspace=True)
    assert rw.rule == "defer-output" and rw.exact and not rw.module_wide
    new = rw.apply(SRC)
    ast.parse(new)
    assert "    _say_in_graph('warn', 'careful', 'UserWarning')\n" in new
    assert "reorderable_logging_functions" not in new
    # The op's definition, added after the imports, has two blank lines below it (PEP 8,
    # ruff's E305), above the module-level line that was one blank line below the imports.
    assert "\n\n\nlogger = logging.getLogger(__name__)\n" in new
    assert "\n\n\n\nlogger" not in new
    # A print of a shape: made from the real tensor where the graph runs (a size torch keeps
    # symbolic is not read while it traces).
    (rw,) = propose(_break(_line('print("h"')), SRC, in_workspace=True)
    assert rw.rule == "defer-output"
    assert "    _print_in_graph('h {0.shape}', [h])\n" in rw.apply(SRC)


def test_lines_move_by_what_the_rewrite_adds() -> None:
    (rw,) = propose(_break(_line("logger.warning")), SRC, in_workspace=True)
    assert rw.delta == 1
    assert rw.new_line(rw.start - 1) == rw.start - 1
    assert rw.new_line(rw.start) is None
    assert rw.new_line(rw.end + 1) == rw.end + 2
    (where,) = propose(_break(_line("if h.sum()")), SRC, in_workspace=True)
    assert where.delta == -3 and where.new_line(where.end + 1) == where.start + 1


def test_nothing_is_proposed_where_the_pattern_does_not_hold() -> None:
    assert propose(_break(_line("a = 1; print(a)")), SRC, in_workspace=True) == []
    assert propose(_break(_line("if h.mean()")), SRC, in_workspace=True) == []  # two statements
    assert propose(_break(_line("h = x + 1")), SRC, in_workspace=True) == []


def test_refused_outside_the_workspace_for_other_kinds_and_without_import_torch() -> None:
    line = _line("print(")
    assert propose(_break(line), SRC, in_workspace=False) == []
    assert propose(_break(line, Kind.RECOMPILE), SRC, in_workspace=True) == []
    assert propose(_break(line), SRC.replace("import torch\n", ""), in_workspace=True) == []
    assert propose(_break(line), "def broken(:\n", in_workspace=True) == []


def test_a_diff_names_the_file_and_shows_both_sides() -> None:
    rw = Rewrite("guard-output", "t", "/ws/m.py", 2, 2, "    if c:\n        y()\n", exact=True)
    diff = rw.diff("a\n    y()\nb\n", "m.py")
    assert diff.startswith("--- a/m.py\n+++ b/m.py\n")
    assert "-    y()\n+    if c:\n+        y()\n" in diff


LIB_USER = '''"""Calls a library that logs."""

import sys

sys.path.insert(0, "lib")

import torch
from transformers import GPT2LMHeadModel


def compile_example():
    return GPT2LMHeadModel, ()
'''


def _library_break(code: str) -> Finding:
    f = _break(12)
    f.data["library"] = "transformers/modeling_utils.py:4778"
    f.stack = [
        Frame("/ws/m.py", 12, "compile_example"),
        Frame("/site-packages/transformers/modeling_utils.py", 4778, "loss", code=code),
    ]
    return f


def test_a_library_logger_break_gets_the_setting_after_the_users_imports() -> None:
    (rw,) = propose(_library_break("logger.warning_once("), LIB_USER, in_workspace=True)
    assert rw.rule == "ignore-logger" and rw.exact
    after = rw.apply(LIB_USER)
    ast.parse(after)
    lines = after.splitlines()
    at = lines.index("from transformers import GPT2LMHeadModel")
    assert lines[at + 1] == "import logging"  # the file did not import it
    assert (
        lines[at + 4]
        == "torch._dynamo.config.ignore_logger_methods.add(logging.Logger.warning_once)"
    )
    # The break's own line moves down by what was inserted above it.
    assert rw.new_line(12) == 12 + rw.delta and rw.delta == 4
    # Only where the library's line is a logger call, and not twice.
    assert propose(_library_break("return torch.nonzero(x)"), LIB_USER, in_workspace=True) == []
    assert propose(_library_break("logger.warning_once("), after, in_workspace=True) == []


def test_a_library_frame_without_source_text_is_read_from_its_file(tmp_path) -> None:
    # torch 2.8 names the library's line but gives no text for it.
    lib = tmp_path / "lib.py"
    lib.write_text("import logging\n\n\ndef f(x):\n    logging.getLogger().warning('hi')\n")
    f = _library_break("")
    f.stack[-1] = Frame(str(lib), 5, "f")
    (rw,) = propose(f, LIB_USER, in_workspace=True)
    assert "logging.Logger.warning)" in rw.text


def test_the_setting_torchs_hint_names_is_proposed_after_the_imports() -> None:
    f = _break(12)
    f.hints = [
        "Use `torch._dynamo.config.capture_scalar_outputs = True` to capture the value",
    ]
    (rw,) = propose(f, LIB_USER, in_workspace=True)
    assert rw.rule == "capture-setting" and rw.exact
    after = rw.apply(LIB_USER)
    ast.parse(after)
    assert "torch._dynamo.config.capture_scalar_outputs = True\n" in after
    assert "import logging" not in after  # only the logger setting needs it
    # Not where torch's hint names no such setting, and not twice.
    assert propose(_break(12), LIB_USER, in_workspace=True) == []
    assert propose(f, after, in_workspace=True) == []


CHECKS = """import torch


def g(h, mask=None):
    assert not torch.isnan(h).any(), "NaN in h"
    assert h.sum() > 0, f"bad {h.shape}"
    if h.abs().max() > 1e6:
        raise ValueError("overflow")
    if torch.isinf(h).any() or not h.sum() > 1e4:  # why
        h = torch.zeros_like(h)
    if mask is not None and mask.any():
        h = h * mask
    a = 1; assert h.min() > -9
    if h.mean() > 0:
        return h * 2
    return h - 1


def k(h):
    if h.mean() > 0:
        return h * 2
    else:
        return h - 1
"""


def test_a_tensor_assert_or_raise_becomes_a_check_in_the_graph_raising_the_same() -> None:
    """Issue 34: the check raises the original exception, type and message, from a custom op
    the rule adds once, after the imports (``torch._assert_async`` raised RuntimeError)."""
    rw = only_rewrite(CHECKS, "assert not")
    assert (
        rw.rule == "check-in-graph"
        and rw.exact
        and rw.branch == rw.end == _at(CHECKS, "assert not")
    )
    new = rw.apply(CHECKS)
    ast.parse(new)
    assert new.count('@torch.library.custom_op("dynamo_lens::raise_if"') == 1
    assert 'if not hasattr(torch.ops.dynamo_lens, "raise_if"):' in new  # defined once
    binding = "_raise_if = torch.ops.dynamo_lens.raise_if\n"
    assert new.index("import torch") < new.index(binding) < new.index("def g(")
    assert "    _raise_if(torch.isnan(h).any(), 'AssertionError', 'NaN in h')\n" in new
    # Every line between the imports and the check is kept, and maps to where it went.
    assert rw.new_line(_at(CHECKS, "def g(")) == _at(new, "def g(")
    # A message built at run time is not one the op could give exactly.
    assert propose(break_at(CHECKS, "assert h.sum()"), CHECKS, in_workspace=True) == []
    rw = only_rewrite(CHECKS, "if h.abs()")
    assert rw.end == _at(CHECKS, "if h.abs()") + 1  # the raise goes too
    assert "    _raise_if(h.abs().max() > 1e6, 'ValueError', 'overflow')\n" in rw.apply(CHECKS)
    # A file that has the op already: only the check's lines are replaced.
    once = rw.apply(CHECKS)
    rw2 = only_rewrite(once, "assert not")
    assert rw2.start == rw2.end and rw2.text.startswith("    _raise_if(")
    assert propose(break_at(CHECKS, "a = 1; assert"), CHECKS, in_workspace=True) == []
    # An exception class of the user's, a cause, two arguments: left alone.
    for raised in ("MyError('x')", "ValueError('x') from None", "ValueError('x', 1)"):
        src = CHECKS.replace('raise ValueError("overflow")', f"raise {raised}")
        assert propose(break_at(src, "if h.abs()"), src, in_workspace=True) == [], raised


def _at(src: str, text: str) -> int:
    return next(i for i, ln in enumerate(src.splitlines(), 1) if text in ln)


def test_not_and_or_in_a_selected_condition_become_logical_ops() -> None:
    rw = only_rewrite(CHECKS, "if torch.isinf")
    # Too long for one line: the condition is named first.
    assert rw.text == (
        "    cond = torch.logical_or(torch.isinf(h).any(), torch.logical_not(h.sum() > 1e4))\n"
        "    h = torch.where(cond, torch.zeros_like(h), h)  # why\n"
    )
    # `mask is not None and ...` guards the next operand: it stays a Python `if` around the
    # selection, so `mask.any()` is still computed only where there is a mask.
    rw = only_rewrite(CHECKS, "if mask is not None")
    assert rw.text == "    if mask is not None:\n        h = torch.where(mask.any(), h * mask, h)\n"


FP16_GUARD = """import torch


def layer(h):
    if h.dtype == torch.float16 and (
        torch.isinf(h).any() or torch.isnan(h).any()
    ):  # fp16 overflow
        clamp_value = torch.finfo(h.dtype).max - 1000
        h = torch.clamp(h, min=-clamp_value, max=clamp_value)
    return h


def pick(h, n):
    if h.shape[-1] == 8 and h.ndim > 1 and h.sum() > 0:
        return h * 2
    else:
        return h - 1
"""


def test_tests_of_dtype_and_shape_stay_a_python_if_around_the_selection() -> None:
    """Issue 34: Florence-2's and Blenderbot's fp16 clamp. ``h.dtype == torch.float16`` is a
    Python bool while torch traces: ``logical_and`` of it and a tensor raised a TypeError on
    the rule's own example."""
    rw = only_rewrite(FP16_GUARD, "if h.dtype")
    assert rw.rule == "torch-where" and (rw.start, rw.end) == (5, 9)
    assert rw.text == (  # the comment of the test's last line goes above, kept
        "    # fp16 overflow\n"
        "    if h.dtype == torch.float16:\n"
        "        clamp_value = torch.finfo(h.dtype).max - 1000\n"
        "        cond = torch.logical_or(torch.isinf(h).any(), torch.isnan(h).any())\n"
        "        h = torch.where(cond, torch.clamp(h, min=-clamp_value, max=clamp_value), h)\n"
    )
    ast.parse(rw.apply(FP16_GUARD))
    # With the other arm: it is kept, as written, where the Python tests fail.
    rw = only_rewrite(FP16_GUARD, "if h.shape[-1]")
    assert rw.text == (
        "    if h.shape[-1] == 8 and h.ndim > 1:\n"
        "        return torch.where(h.sum() > 0, h * 2, h - 1)\n"
        "    return h - 1\n"
    )
    # Only a test that opens the condition is hoisted; a tensor test first keeps `and`.
    src = FP16_GUARD.replace("h.dtype == torch.float16 and (", "h.sum() > 0 and (")
    rw = only_rewrite(src, "if h.sum() > 0 and")
    assert "logical_and(h.sum() > 0" in rw.text and "if h.sum" not in rw.text


def test_a_branch_that_returns_selects_what_is_returned() -> None:
    k = "import torch\n\n\n" + CHECKS[CHECKS.index("def k") :]
    for src, lines in ((CHECKS, 3), (k, 4)):  # `if`, return, return; or with an `else:`
        rw = only_rewrite(src, "if h.mean()")
        assert rw.text == "    return torch.where(h.mean() > 0, h * 2, h - 1)\n"
        assert rw.end - rw.start + 1 == lines


MORE = """import logging

import torch

logger = logging.getLogger(__name__)


def f(h, ids):
    if 0 in ids[:, [-1, 0]]:
        logger.warning("pad")
    if torch.isinf(h).any():
        limit = torch.finfo(h.dtype).max - 1000
        h = torch.clamp(h, min=-limit, max=limit)
    if h.sum() > 0:
        scale = 2
        h = h * scale
    print(scale)
    return h
"""


def test_an_if_that_only_outputs_is_guarded_whole_or_said_where_its_test_holds() -> None:
    guard, said = propose(break_at(MORE, "if 0 in ids"), MORE, in_workspace=True)
    assert guard.rule == "guard-output" and guard.end == guard.start + 1
    assert guard.text.splitlines()[1] == "        if 0 in ids[:, [-1, 0]]:"
    assert said.rule == "output-if" and said.selects and said.branch == guard.start
    assert "(ids[:, [-1, 0]] == 0).any(), __name__, 'warning'" in said.apply(MORE)


def test_a_helper_value_that_opens_the_branch_is_computed_before_the_selection() -> None:
    rw = only_rewrite(MORE, "if torch.isinf")
    assert rw.text == (
        "    limit = torch.finfo(h.dtype).max - 1000\n"
        "    h = torch.where(torch.isinf(h).any(), torch.clamp(h, min=-limit, max=limit), h)\n"
    )
    # Not a helper that is read after the branch: it would then always be set.
    assert propose(break_at(MORE, "if h.sum()"), MORE, in_workspace=True) == []


def test_a_frame_torch_skipped_after_a_break_gets_the_breaks_rewrite() -> None:
    f = break_at(MORE, "if 0 in ids")
    f.kind = Kind.FALLBACK  # a break in a loop: torch runs the whole frame eagerly
    assert [rw.rule for rw in propose(f, MORE, in_workspace=True)] == ["guard-output", "output-if"]
    f.kind = Kind.RECOMPILE
    assert propose(f, MORE, in_workspace=True) == []


def test_any_over_tensor_tests_is_stacked_and_a_mapped_list_selected_element_wise() -> None:
    src = (
        "import torch\n\n\ndef f(outs, outs_cond):\n"
        "    if not all(o.max() > 9 for o in outs):  # clip\n"
        "        outs = [o.clamp(-9, 9) for o in outs]\n"
        "    return outs\n"
    )
    rw = only_rewrite(src, "if not all(")
    assert rw.rule == "torch-where" and rw.exact and (rw.start, rw.end) == (5, 6)
    assert rw.text == (
        "    outs_cond2 = torch.logical_not((torch.stack([o.max() > 9 for o in outs]).all() "
        "if len(outs) else torch.tensor(True)))  # clip\n"
        "    outs = [torch.where(outs_cond2, o.clamp(-9, 9), o) for o in outs]\n"
    )
    for other in (
        "if any(o.max() > 9 for o in outs if o.numel()):",  # a Python filter
        "if any(flags):",  # not a comprehension: its items may be Python bools
        "if any(o.max() > 9 for o in outs) and outs:",  # a Python guard
    ):
        changed = src.replace("if not all(o.max() > 9 for o in outs):", other)
        assert propose(break_at(changed, "    if "), changed, in_workspace=True) == [], other
    other = src.replace("for o in outs]\n", "for o in others]\n")  # not a map of itself
    assert propose(break_at(other, "if not all("), other, in_workspace=True) == []


def test_no_selection_on_a_python_bool_or_between_lists() -> None:
    src = (
        "import torch\n\n\ndef f(outs, mask, cached):\n"
        "    if any(o.max() > 9 for o in outs):\n"
        "        outs = [mask, cached]\n"
        "    if torch.equal(mask, cached * 2):\n"
        "        bias = cached\n"
        "    else:\n"
        "        bias = mask\n"
        "    if mask.any():\n"
        "        outs = [mask]\n"
        "    if callable(mask):\n"
        "        bias = mask\n"
        "    return outs, bias\n"
    )
    # torch.equal of a computed value: it would be computed twice.
    for text in ("if any(", "if torch.equal", "if mask.any()", "if callable("):
        assert propose(break_at(src, text), src, in_workspace=True) == [], text


def test_torch_equal_selects_on_equal_shapes_and_elements() -> None:
    src = (
        "import torch\n\n\ndef f(mask, cached, bias):\n"
        "    if torch.equal(mask, cached):\n"
        "        bias = bias * 0\n"
        "    return bias\n"
    )
    rw = only_rewrite(src, "if torch.equal")
    assert rw.rule == "torch-where" and rw.exact
    # The shapes' test stays Python (static while tracing): tensors of other shapes never
    # meet in torch.where, where the original's other arm would have run.
    assert rw.text == (
        "    if mask.shape == cached.shape:\n"
        "        bias = torch.where((mask == cached).all(), bias * 0, bias)\n"
    )
    with_else = src.replace(
        "    return bias", "    else:\n        bias = bias + 1\n    return bias"
    )
    rw = only_rewrite(with_else, "if torch.equal")
    assert rw.text == (
        "    if mask.shape == cached.shape:\n"
        "        bias = torch.where((mask == cached).all(), bias * 0, bias + 1)\n"
        "    else:\n"
        "        bias = bias + 1\n"
    )


def test_a_disabled_helper_that_only_computes_is_traced_non_strictly() -> None:
    src = (
        "import torch\n\nSTATS = []\n\n\n@torch.compiler.disable\n"
        "def stats(name, t):\n    m = t.mean()\n    return {name: (m, t.std())}\n\n\n"
        "@torch._dynamo.disable\n"
        "def keep(t):\n    STATS.append(t.mean())\n    return t\n\n\n"
        "def f(x):\n    stats('h', x)\n    keep(x)\n    return x\n"
    )
    (rw,) = propose(break_at(src, "stats('h'"), src, in_workspace=True)
    assert rw.rule == "nonstrict-trace" and rw.exact
    assert (rw.start, rw.end, rw.text) == (6, 6, "@torch._dynamo.nonstrict_trace\n")
    assert rw.new_line(break_at(src, "stats('h'").line) == break_at(src, "stats('h'").line
    ast.parse(rw.apply(src))
    # A helper with a side effect keeps its marker: non-strict tracing runs it once.
    assert propose(break_at(src, "keep(x)"), src, in_workspace=True) == []
    for effect in ("global STATS", "t.add_(1)", "t.grad = None", "print(t)"):
        other = src.replace("    m = t.mean()\n", f"    {effect}\n    m = t.mean()\n")
        assert propose(break_at(other, "stats('h'"), other, in_workspace=True) == [], effect


LONGROPE = """import torch
from torch import nn


class Rope(nn.Module):
    def forward(self, x, position_ids):
        if torch.max(position_ids) + 1 > self.original_max:  # long context
            self.register_buffer("inv_freq", self.long_inv_freq, persistent=False)
        else:
            self.register_buffer("inv_freq", self.original_inv_freq, persistent=False)
        return x * self.inv_freq
"""


def test_a_buffer_swap_is_one_registration_of_the_selected_table() -> None:
    """Issue 34: Phi-4's LongRoPE. One call, its argument selected; neither table is written
    into (``original_inv_freq`` shares its storage with the first ``inv_freq``)."""
    rw = only_rewrite(LONGROPE, "if torch.max")
    assert rw.rule == "select-argument" and rw.exact and rw.selects and rw.branch == rw.start
    assert rw.text == (
        '        self.register_buffer("inv_freq", torch.where(torch.max(position_ids) + 1 > '
        "self.original_max, self.long_inv_freq, self.original_inv_freq), persistent=False)"
        "  # long context\n"
    )
    assert "__dynamo_lens_where__(" in rw.checked and "copy_" not in rw.text
    ast.parse(rw.apply(LONGROPE))
    # Two arguments differ, another call, a value with a side effect: left alone.
    for other in (
        'self.register_buffer("freq", self.original_inv_freq, persistent=False)',
        'self.register_buffer("inv_freq", self.original_inv_freq, persistent=True)',
        'self.set_buffer("inv_freq", self.original_inv_freq, persistent=False)',
        'self.register_buffer("inv_freq", self.tables.pop(), persistent=False)',
    ):
        src = LONGROPE.replace(
            'self.register_buffer("inv_freq", self.original_inv_freq, persistent=False)', other
        )
        assert [r.rule for r in propose(break_at(src, "if torch.max"), src, True)] == [], other


QWEN_LOG = """import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class Attention(nn.Module):
    def forward(self, x):
        logger.warning_once("sdpa cannot return weights")  # fallback
        return x * 2
"""


def test_a_logger_call_logs_from_inside_the_graph_through_an_op_added_once() -> None:
    """Issue 34: GraphMend defers such calls; torch's reorderable functions do not cover a
    logger's methods, nor an inlined module. The record keeps its logger, level and message."""
    rws = propose(break_at(QWEN_LOG, "logger.warning_once"), QWEN_LOG, in_workspace=True)
    assert [r.rule for r in rws] == ["guard-output", "defer-log"]  # the smaller edit first
    rw = rws[1]
    new = rw.apply(QWEN_LOG)
    ast.parse(new)
    call = "_log_in_graph(__name__, 'warning_once', 'sdpa cannot return weights')"
    assert f"        {call}  # fallback\n" in new
    assert new.count('@torch.library.custom_op("dynamo_lens::log"') == 1
    assert rw.new_line(_at(QWEN_LOG, "class Attention")) == _at(new, "class Attention")
    # A message built at run time, a logger passed in, a logger the file does not bind: left.
    for src in (
        QWEN_LOG.replace('"sdpa cannot return weights"', 'f"{x.shape}"'),
        QWEN_LOG.replace("def forward(self, x):", "def forward(self, x, logger):"),
        QWEN_LOG.replace("logger = logging.getLogger(__name__)", "logger = make_logger()"),
    ):
        found = propose(break_at(src, "logger.warning_once"), src, in_workspace=True)
        assert "defer-log" not in [r.rule for r in found]


@pytest.mark.parametrize(
    "body",
    [
        '        raise ValueError("neg")\n',  # check-in-graph
        "        y = x * 2\n",  # torch-where
        '        print("pos")\n',  # output-if
    ],
)
def test_no_rule_rewrites_an_elif_as_if_the_tests_before_it_were_not_there(body: str) -> None:
    """Replacing an ``elif``'s lines would run it whatever the earlier tests said (hostile
    review: an ``elif (mask == 0).all()`` became a bare call that crashed on ``mask=None``)."""
    src = (
        "import torch\n\n\ndef f(x, m=None):\n    y = x\n    if m is None:\n        y = x\n"
        f"    elif (x < 0).any():\n{body}    return y\n"
    )
    assert propose(break_at(src, "elif"), src, in_workspace=True) == []
    # The same test as an ``if`` of its own is still taken.
    plain = src.replace("    elif (x < 0)", "    if (x < 0)")
    assert propose(break_at(plain, "if (x < 0)"), plain, in_workspace=True) != []


def test_torch_equal_inside_a_larger_test_keeps_its_shapes_test_or_is_refused() -> None:
    """Hostile review: the shapes' test was kept only for a bare ``if torch.equal``; after a
    dtype test, or inside ``and``, tensors of other shapes met in the selection's arms."""
    src = (
        "import torch\n\n\ndef f(a, b):\n    y = a * 2\n"
        "    if a.dim() == 2 and torch.equal(a, b):\n        y = y + b\n    return y\n"
    )
    rw = only_rewrite(src, "    if a.dim()")
    assert rw.text == (
        "    if a.dim() == 2 and a.shape == b.shape:\n"
        "        y = torch.where((a == b).all(), y + b, y)\n"
    )
    inside = src.replace(
        "a.dim() == 2 and torch.equal(a, b)", "torch.equal(a, b) and (a > 0).all()"
    )
    assert propose(break_at(inside, "    if torch.equal"), inside, in_workspace=True) == []


def test_the_same_warning_from_two_places_is_not_moved_into_one_op() -> None:
    """Python shows a warning once per place: two places warning the same text would become
    the op's one place (hostile review)."""
    src = (
        "import warnings\n\nimport torch\n\n\ndef f(x):\n"
        '    warnings.warn("slow path")\n    y = x + 1\n    warnings.warn("slow path")\n'
        "    return y\n"
    )
    assert propose(break_at(src, 'warn("slow'), src, in_workspace=True) == []
    once = src.replace('    warnings.warn("slow path")\n    return y', "    return y")
    (rw,) = propose(break_at(once, 'warn("slow'), once, in_workspace=True)
    assert rw.rule == "defer-output"
