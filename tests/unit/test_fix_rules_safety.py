"""The catalogue of rewrites (fixes/catalogue.py), without torch, continued: loops that exit
on a tensor, host work kept to eager, explicit breaks, argmax indices, what a selection's arms
may do, and what the hostile reviews found refused."""

from __future__ import annotations

import ast

from dynamo_lens.findings import Finding, Frame, Kind, Severity
from dynamo_lens.fixes.catalogue import propose
from support.fix_cases import break_at, only_rewrite

LOOP = """import torch


def solve(w, x, tol, n):
    z = torch.zeros_like(x)
    for _ in range(n):  # iterate
        z_next = torch.tanh(z @ w + x)
        if (z_next - z).norm() < tol:
            break
        z = z_next
    return z
"""


def test_a_loop_that_exits_on_a_tensor_runs_every_iteration_keeping_the_exits_values() -> None:
    rw = only_rewrite(LOOP, "if (z_next")
    assert rw.rule == "loop-exit" and rw.exact and (rw.start, rw.end) == (6, 10)
    assert rw.text == (
        "    exited = torch.zeros((), dtype=torch.bool, device=z.device)\n"
        "    for _ in range(n):  # iterate\n"
        "        z_next = torch.tanh(z @ w + x)\n"
        "        exited = torch.logical_or(exited, (z_next - z).norm() < tol)\n"
        "        z = torch.where(exited, z, z_next)\n"
    )
    assert "computed and discarded" in rw.title


def test_a_loop_exit_is_left_where_the_exits_values_are_not_all_kept() -> None:
    for old, new in (
        ("    return z\n", "    return z, z_next\n"),  # a value the loop does not carry, read after
        ("    return z\n", "    return z, _\n"),  # the counter, read after
        ("    z = torch.zeros_like(x)\n", ""),  # nothing to keep on an exit at once
        ("        z = z_next\n", "        z = z_next\n        print(z)\n"),  # not an assignment
        ("        z = z_next\n", "        z = z_next\n    else:\n        z = x\n"),  # for-else
        ("        z = z_next\n", ""),  # nothing carried
        # The iterations after the exit now run: nothing with an effect, no infinite gradient.
        ("z @ w + x", "f(z) + x"),  # a call whose effects the source does not show
        ("z @ w + x", "z.add_(x)"),  # in place
        ("z @ w + x", "torch.sqrt(z) + x"),  # an infinite gradient at 0
        ("z @ w + x", "(z @ w) / z.norm()"),  # a division
        ("z @ w + x", "z @ w + torch.randn_like(x)"),  # a random draw
    ):
        src = LOOP.replace(old, new)
        ast.parse(src)
        assert propose(break_at(src, "if (z_next"), src, in_workspace=True) == [], new
    nested = LOOP.replace(
        "    for _ in range(n):", "    for _ in range(n):\n     for k in range(2):"
    )
    nested = nested.replace("\n        ", "\n         ")
    ast.parse(nested)
    assert propose(break_at(nested, "if (z_next"), nested, in_workspace=True) == []


def test_a_setting_torchs_hint_names_for_a_recompile_is_its_only_rewrite() -> None:
    src = "import torch\n\n\ndef f(m, x):\n    return x * m.step\n"
    hint = (
        "torch.compile considers integer attributes of the nn.Module to be static. If you are "
        "observing recompilation, you might want to make this integer dynamic using "
        "torch._dynamo.config.allow_unspec_int_on_nn_module = True, or convert this integer "
        "into a tensor."
    )
    f = Finding(Kind.RECOMPILE, Severity.WARNING, "/ws/m.py", 5, 0, 5, 1, "m", hints=[hint])
    (rw,) = propose(f, src, in_workspace=True)
    assert rw.rule == "torch-setting" and rw.module_wide and rw.exact
    assert "torch._dynamo.config.allow_unspec_int_on_nn_module = True\n" in rw.text
    assert (rw.start, rw.end) == (1, 1)
    ast.parse(rw.apply(src))
    # Our own advice names no setting: a recompile without torch's gets nothing.
    f.hints = ["Mark the dimension dynamic before the first call, or compile with dynamic=True."]
    assert propose(f, src, in_workspace=True) == []
    # A break whose hint names one gets it after the rules that read its line.
    brk = break_at(src, "return x")
    brk.hints = ["Set torch._dynamo.config.allow_rnn=True to enable experimental support"]
    assert [r.rule for r in propose(brk, src, in_workspace=True)] == ["torch-setting"]


HOST = """import datetime
import time

import torch


class M(torch.nn.Module):
    def forward(self, x):
        t0 = time.perf_counter()
        y = x * 2
        self.ms = (time.perf_counter() - t0) * 1000
        self.stamp = datetime.datetime.now()
        torch.save(y.detach(), "/tmp/y.pt")
        return y
"""


def test_host_timing_stamps_and_dumps_run_only_in_eager_with_what_reads_them() -> None:
    rw = only_rewrite(HOST, "t0 = time")
    assert rw.rule == "guard-host" and rw.exact and "compiled calls skip them" in rw.title
    assert (rw.start, rw.end) == (9, 11)
    assert rw.text == (
        "        if not torch.compiler.is_compiling():\n"
        "            t0 = time.perf_counter()\n"
        "        y = x * 2\n"
        "        if not torch.compiler.is_compiling():\n"
        "            self.ms = (time.perf_counter() - t0) * 1000\n"
    )
    # The statement between the guarded two is the same line, moved: a break there is not new.
    assert rw.kept == ((10, 11),) and rw.new_line(10) == 11 and rw.new_line(9) is None
    assert rw.new_line(12) == 14
    for text in ("datetime.datetime.now()", "torch.save"):
        one = only_rewrite(HOST, text)
        assert one.rule == "guard-host" and one.start == one.end and one.text.count("\n") == 2


def test_host_work_whose_value_reaches_anything_else_is_left() -> None:
    for old, new in (
        ("        return y\n", "        return y, t0\n"),  # returned
        (
            "        y = x * 2\n",
            "        y = x * 2\n        if y.sum() > 0:\n            y = y + t0\n",
        ),
        ("        y = x * 2\n", "        y = x * 2\n        t0 = 1.0\n"),  # bound elsewhere too
        ("    def forward(self, x):\n", "    def forward(self, x, t0=0.0):\n"),  # a parameter
    ):
        src = HOST.replace(old, new)
        ast.parse(src)
        assert propose(break_at(src, "t0 = time"), src, in_workspace=True) == [], new


def test_an_explicit_graph_break_is_removed_and_an_emptied_block_keeps_a_pass() -> None:
    src = (
        "import torch\n\n\ndef f(x, debug):\n    y = x + 1\n    torch._dynamo.graph_break()\n"
        "    if debug:\n        torch._dynamo.graph_break()\n    return y\n"
    )
    rw = only_rewrite(src, "    torch._dynamo.graph_break()")
    assert rw.rule == "drop-break" and rw.exact and rw.text == "" and rw.start == rw.end == 6
    alone = propose(break_at(src, "        torch._dynamo.graph_break()"), src, in_workspace=True)
    assert [(r.start, r.text) for r in alone] == [(8, "        pass\n")]
    other = src.replace("    torch._dynamo.graph_break()\n    if", "    y = torch.relu(y)\n    if")
    assert propose(break_at(other, "torch.relu"), other, in_workspace=True) == []


ARGMAX = """import torch


def pick(x, scores):
    best = scores.argmax()
    return (x + 1)[best] * x.flatten(0, 1)[best]
"""


def test_a_zero_d_argmax_used_as_an_index_selects_inside_the_graph() -> None:
    rw = only_rewrite(ARGMAX, "return")
    assert rw.rule == "tensor-index" and rw.exact
    assert rw.text == (
        "    return (x + 1).index_select(0, best.reshape(1)).squeeze(0)"
        " * x.flatten(0, 1).index_select(0, best.reshape(1)).squeeze(0)\n"
    )
    for old, new in (
        ("scores.argmax()", "scores.argmax(-1)"),  # not 0-d
        ("scores.argmax()", "int(scores.argmax())"),  # a Python int already
        ("    return", "    best = best + 1\n    return"),  # bound twice
    ):
        src = ARGMAX.replace(old, new)
        assert propose(break_at(src, "return"), src, in_workspace=True) == [], new
    torch_form = ARGMAX.replace("scores.argmax()", "torch.argmin(scores)")
    assert only_rewrite(torch_form, "return").rule == "tensor-index"


ARMS = """import torch


def g(h):
    return h.abs()


def f(x, noise):
    h = x * 2
    if h.sum() > 0:  # pick
        h = ARM
    return h
"""


def test_a_selection_computes_both_arms_so_an_arm_must_only_compute() -> None:
    """torch-where evaluates the arm the original skipped: nothing in it may change state,
    draw random numbers or call what the source cannot see into (issue 28)."""
    for arm in (
        "h.clamp_(min=0)",  # in place
        "torch.add(h, 1, out=h)",  # into a tensor
        "h + torch.randn_like(h)",  # a random draw
        "torch.nn.functional.dropout(h, 0.1)",  # a random draw
        "h + unknown(h)",  # effects the source does not show
        "(noise := h) * 2",  # an assignment
    ):
        src = ARMS.replace("ARM", arm)
        ast.parse(src)
        assert propose(break_at(src, "if h.sum()"), src, in_workspace=True) == [], arm
    # Pure calls pass: the file's own pure function, a method, torch.
    src = ARMS.replace("ARM", "g(h) + h.relu() + torch.tanh(h)")
    (rw,) = propose(break_at(src, "if h.sum()"), src, in_workspace=True)
    assert (
        rw.text == "    h = torch.where(h.sum() > 0, g(h) + h.relu() + torch.tanh(h), h)  # pick\n"
    )
    assert rw.branch == break_at(src, "if h.sum()").line  # inputs that take each path get tried


def test_an_arm_whose_gradient_can_be_infinite_gets_its_operand_selected_too() -> None:
    """The untaken arm's gradient is multiplied by zero, and 0 * inf is NaN: sqrt, log and a
    division see a safe value on the path not taken (the "double where"); a power is refused."""
    src = ARMS.replace("ARM", "torch.sqrt(h) + (h + 1).log() / h.norm()")
    (rw,) = propose(break_at(src, "if h.sum()"), src, in_workspace=True)
    assert rw.text == (
        "    cond = h.sum() > 0\n"
        "    h = torch.where(cond, torch.sqrt(torch.where(cond, h, 1.0)) + "
        "(torch.where(cond, h + 1, 1.0)).log() / torch.where(cond, h.norm(), 1.0), h)  # pick\n"
    )
    ast.parse(rw.apply(src))
    for arm in ("h ** 0.5", "torch.sqrt(torch.log(h))", "torch.pow(h, 0.5)"):
        src = ARMS.replace("ARM", arm)
        assert propose(break_at(src, "if h.sum()"), src, in_workspace=True) == [], arm
    # In the else arm the safe value goes to the taken side of the flag.
    src = ARMS.replace("        h = ARM\n", "        h = h * 2\n    else:\n        h = h.rsqrt()\n")
    (rw,) = propose(break_at(src, "if h.sum()"), src, in_workspace=True)
    assert "torch.where(cond, h * 2, torch.where(cond, 1.0, h).rsqrt())" in rw.text


def test_an_output_whose_argument_does_more_than_compute_is_not_guarded() -> None:
    """Compiled calls skip a guarded print: ``print(self.calls.add_(1))`` would stop
    counting."""
    base = "import torch\n\n\ndef f(self, x):\n    print(ARG)\n    return x\n"
    for arg in ("self.calls.add_(1)", "self.seen.append(x)", "next(self.it)", "tick()"):
        src = base.replace("ARG", arg)
        assert propose(break_at(src, "print("), src, in_workspace=True) == [], arg
    src = base.replace("ARG", "f'{x.shape} {x.sum().item()} {len(x)}'")
    # A print of values: neither guarded (compiled calls would not print) nor said by the op.
    assert propose(break_at(src, "print("), src, in_workspace=True) == []
    src = base.replace("print(ARG)", "print('tick', 'tock')")
    (rw,) = propose(break_at(src, "print("), src, in_workspace=True)
    assert rw.rule == "defer-output" and rw.branch == 0
    assert "_say_in_graph('print', 'tick tock', '')" in rw.apply(src)


def test_the_probe_wraps_only_the_branchs_test_and_keeps_every_line() -> None:
    from dynamo_lens.fixes.probe import PROBE, probed

    src = (
        "import torch\n\n\ndef f(h):\n    if (h.sum() >\r\n            0):  # é\r\n"
        "        h = -h\n    assert h.max() < 9, 'big'\n    return h\n"
    )
    out = probed(src, 5)
    assert out is not None and out.count("\n") == src.count("\n")
    assert f"if ({PROBE}(h.sum() >\r\n            0)):  # é" in out
    out = probed(src, 8)
    assert out is not None and f"assert {PROBE}(h.max() < 9), 'big'" in out
    assert probed(src, 7) is None and probed("def (:", 1) is None


def test_what_the_hostile_review_found_is_refused() -> None:
    """Each a rewrite that was once written as verified and changed what the code does."""
    # A method named like a logger's on an object that records: a metric, not output.
    src = "import torch\n\n\ndef f(self, h):\n    self.meter.log(h.mean().item())\n    return h\n"
    assert propose(break_at(src, "meter.log"), src, in_workspace=True) == []
    for logger in ("logger", "self.logger", "_LOGGER", "logging", "log"):
        ok = src.replace("self.meter.log(h.mean().item())", f"{logger}.info('m %s', h.shape)")
        (rw,) = propose(break_at(ok, ".info("), ok, in_workspace=True)
        assert rw.rule == "guard-output", logger
    # A method of the user's in a print's argument may record something.
    src = "import torch\n\n\ndef f(self, h):\n    print('n', self.remember(h))\n    return h\n"
    assert propose(break_at(src, "print("), src, in_workspace=True) == []
    # An arm that writes into its input, divides by what may be 0, or may raise.
    for arm in ("F.relu(x, inplace=True)", "torch.divide(h, x)", "torch.linalg.solve(h, x)"):
        s = ARMS.replace("ARM", arm)
        assert propose(break_at(s, "if h.sum()"), s, in_workspace=True) == [], arm
    # A loop-carried Python number would come out a tensor.
    src = LOOP.replace("    z = torch.zeros_like(x)\n", "    z = 0\n")
    assert propose(break_at(src, "if (z_next"), src, in_workspace=True) == []


def test_a_guard_keeps_a_strings_own_lines_and_a_selection_keeps_the_branchs_comments() -> None:
    src = (
        "import logging\n\nimport torch\n\n\ndef f(h):\n"
        '    logging.info("""report:\n  total=%s""" % h.shape)\n'
        "    return h\n"
    )
    (rw,) = propose(break_at(src, "logging.info("), src, in_workspace=True)
    assert rw.text == (
        "    if not torch.compiler.is_compiling():\n"
        '        logging.info("""report:\n  total=%s""" % h.shape)\n'
    )
    src = ARMS.replace(
        "        h = ARM\n", "        # TODO(alice): keep\n        h = h * 2  # see #123\n"
    )
    (rw,) = propose(break_at(src, "if h.sum()"), src, in_workspace=True)
    assert rw.text == (
        "    # TODO(alice): keep\n"
        "    # see #123\n"
        "    h = torch.where(h.sum() > 0, h * 2, h)  # pick\n"
    )


def test_what_the_second_hostile_review_found_is_refused() -> None:
    # An index that may be out of range where the original never indexed.
    for arm in ("h + self.table[ids]", "h.gather(0, ids)", "F.embedding(ids, h)"):
        src = ARMS.replace("ARM", arm).replace("def f(x, noise):", "def f(self, x, ids):")
        assert propose(break_at(src, "if h.sum()"), src, in_workspace=True) == [], arm
    # Constant indices and slices never raise.
    src = ARMS.replace("ARM", "h[:, 0:4][..., -1:]")
    assert len(propose(break_at(src, "if h.sum()"), src, in_workspace=True)) == 1
    # An overflowing function gets the double where.
    src = ARMS.replace("ARM", "torch.cosh(h)")
    (rw,) = propose(break_at(src, "if h.sum()"), src, in_workspace=True)
    assert "torch.cosh(torch.where(cond, h, 0.0))" in rw.text
    # A disabled helper that reads a value a setter rebinds, or a deque it appends to.
    helper = (
        "import torch\nSCALE = 1.0\n\n\n@torch.compiler.disable\ndef scaled(t):\n"
        "    return t * SCALE\n\n\ndef f(x):\n    return scaled(x)\n"
    )
    assert propose(break_at(helper, "return scaled("), helper, in_workspace=True) == []
    ok = helper.replace("t * SCALE", "t * 2")
    (rw,) = propose(break_at(ok, "return scaled("), ok, in_workspace=True)
    assert rw.rule == "nonstrict-trace"
    # An index whose result is written through: a view became a copy.
    idx = (
        "import torch\n\n\ndef f(self, s):\n    i = s.argmax()\n    slot = self.slots[i]\n"
        "    slot.mul_(0.9)\n    return slot\n"
    )
    assert propose(break_at(idx, "slot = self"), idx, in_workspace=True) == []
    (rw,) = propose(break_at(idx, "slot = self"), idx.replace("slot.mul_(0.9)", "pass"), True)
    assert rw.rule == "tensor-index"


def test_what_the_third_hostile_review_found_is_refused() -> None:
    # The second operand of ``and`` runs where the original stopped at the first.
    src = ARMS.replace("if h.sum() > 0:", "if (ids < 6).all() and (t[ids] > 0).any():")
    src = src.replace("def f(x, noise):", "def f(x, t, ids):")
    assert propose(break_at(src, "    if ("), src, in_workspace=True) == []
    # Integer division by what may be 0.
    for arm in ("h // x", "h % x"):
        s = ARMS.replace("ARM", arm)
        assert propose(break_at(s, "if h.sum()"), s, in_workspace=True) == [], arm
    # A call into another module (a helper of the workspace) may change its state.
    s = ARMS.replace("ARM", "helpers.observe(h)").replace(
        "import torch\n", "import torch\n\nimport helpers\n"
    )
    assert propose(break_at(s, "if h.sum()"), s, in_workspace=True) == []
    s = ARMS.replace("ARM", "F.relu(h)").replace(
        "import torch\n", "import torch\nimport torch.nn.functional as F\n"
    )
    assert len(propose(break_at(s, "if h.sum()"), s, in_workspace=True)) == 1
    # Operations whose gradient is NaN somewhere, with no value that is safe.
    for arm in ("h * h.std(0)", "torch.hypot(h, x)", "torch.atan2(h, x)"):
        s = ARMS.replace("ARM", arm)
        assert propose(break_at(s, "if h.sum()"), s, in_workspace=True) == [], arm


def test_the_logger_setting_keeps_a_users_own_logging_name() -> None:
    src = "from absl import logging\n\nimport torch\n\n\ndef f(x):\n    return lib(x)\n"
    brk = Finding(
        Kind.GRAPH_BREAK,
        Severity.WARNING,
        "/ws/m.py",
        7,
        0,
        7,
        1,
        "Graph break: logging.Logger method not supported",
        data={"library": "lib.py:3"},
        stack=[Frame("/site-packages/lib.py", 3, "lib", code="logger.warning('x')")],
    )
    (rw,) = propose(brk, src, in_workspace=True)
    assert "import logging as std_logging\n" in rw.text
    assert "ignore_logger_methods.add(std_logging.Logger.warning)" in rw.text
    assert "from absl import logging" in rw.apply(src)


def test_what_the_review_of_the_custom_op_rules_found_is_refused() -> None:
    """Issue 34's hostile review: each once written as verified, changing what a caller sees."""
    base = (
        "import logging\nimport warnings\n\nimport torch\n\nlogger = logging.getLogger(__name__)\n"
        "\n\ndef f(h):\n    if (h > 9).any():  # guard\n        raise ValueError('big')  # why\n"
        "    return h\n"
    )
    rw = only_rewrite(base, "if (h > 9)")
    site = "    # why\n    _raise_if((h > 9).any(), 'ValueError', 'big')  # guard\n"
    assert site in rw.apply(base)  # the raise's comment stays at the check, not the imports
    for src in (
        base + "\n\nclass ValueError(Exception):\n    pass\n",  # the file's own ValueError
        base.replace(
            "    if (h > 9)", "    try:\n        pass\n    finally:\n        pass\n    if (h > 9)"
        )
        .replace("    if (h > 9)", "    with ctx:\n        if (h > 9)", 1)
        .replace("        raise ValueError('big')", "            raise ValueError('big')"),
        base.replace("import torch\n", "") + "\n\nimport torch\n",  # torch after a def
    ):
        assert [r.rule for r in propose(break_at(src, "if (h > 9)"), src, True)] == [], src
    # A logger rebound (an adapter around it) is not the one the op would name.
    src = base.replace(
        "    if (h > 9).any():  # guard\n        raise ValueError('big')  # why\n",
        "    logger.warning('slow path')\n",
    )
    assert [r.rule for r in propose(break_at(src, "logger.warning"), src, True)] == [
        "guard-output",
        "defer-log",
    ]
    adapted = src.replace(
        "logger = logging.getLogger(__name__)\n",
        "logger = logging.getLogger(__name__)\nlogger = logging.LoggerAdapter(logger, {})\n",
    )
    assert "defer-log" not in [r.rule for r in propose(break_at(adapted, "logger."), adapted, True)]
    # A warning's category: a built-in one, by name, not one the file defines.
    warn = src.replace("logger.warning('slow path')", "warnings.warn('old', FutureWarning)")
    assert "'warn', 'old', 'FutureWarning'" in only_rewrite(warn, "warnings.warn").apply(warn)
    own = warn + "\n\nclass FutureWarning(Warning):\n    pass\n"
    assert propose(break_at(own, "warnings.warn"), own, True) == []


def test_torch_specials_names_for_unsafe_gradients_get_the_double_where() -> None:
    """From the third hostile review: ``torch.special.gammaln`` and ``psi`` are ``lgamma`` and
    ``digamma`` by another name; the untaken arm's NaN gradient reached the input."""
    for name in ("gammaln", "psi"):
        src = ARMS.replace("ARM", f"torch.special.{name}(h)")
        (rw,) = propose(break_at(src, "if h.sum()"), src, in_workspace=True)
        assert f"torch.special.{name}(torch.where(cond, h, 1.0))" in rw.text, rw.text
    src = ARMS.replace("ARM", "torch.special.multigammaln(h, 2)")
    assert propose(break_at(src, "if h.sum()"), src, in_workspace=True) == []
