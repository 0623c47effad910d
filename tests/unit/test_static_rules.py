"""Static hints: every rule fires where Dynamo breaks and stays silent where it does not.

Snippets mark the lines that must get a hint with ``# HINT``; any other hint fails the test.
Each positive case mirrors a snippet whose break (and GB id) was checked with real torch
(``bench/static/RESULTS.md``); negatives are the usual false-alarm traps.
"""

from __future__ import annotations

import ast

import pytest
from dynamo_lens.static import (
    RULES,
    analyze_source,
    analyze_tree,
)
from dynamo_lens.static import analyzer as analyze_mod
from support.static_snippets import check, module, snippet

# ---- one positive and one negative case per rule ---------------------------------------------


def test_print_call() -> None:
    check(module("y = self.fc(x)\nprint(y.shape)  # HINT\nreturn y\n"), "print-call", "GB0059")


def test_print_in_init_and_unreachable_helper_is_silent() -> None:
    check(
        module(
            "return self.fc(x)\n",
            init="print('building')\n",
            extra="""
            def report(model, x):
                print(model(x).sum().item())
            """,
        )
    )


def test_print_guarded_by_is_compiling_or_false_constant_is_silent() -> None:
    check(
        "DEBUG = False\n"
        + module(
            """
            y = self.fc(x)
            if not torch.compiler.is_compiling():
                print("eager", y.sum().item())
            if DEBUG:
                print("debug")
            return y
            """
        )
    )


def test_logger_and_logging_module_calls() -> None:
    check(module("logger.info('hi %s', x.shape)  # HINT\nreturn x\n"), "logger-call", "GB0291")
    check(
        module("logging.warning('careful')  # HINT\nreturn x\n"),
        "logging-module-call",
        "GB4841",
    )


def test_reorderable_print_config_silences_print() -> None:
    check(
        "torch._dynamo.config.reorderable_logging_functions.add(print)\n"
        + module("print('x')\nreturn x\n")
    )


def test_warnings_call() -> None:
    check(module("warnings.warn('old')  # HINT\nreturn x\n"), "warnings-call", "GB0007")


def test_item_positive_and_on_python_number_negative() -> None:
    check(module("s = x.sum().item()  # HINT\nreturn x + s\n"), "tensor-item", "GB0124")
    check(module("n = x.shape[0]\nreturn x * n\n", params="x"))


def test_capture_scalar_outputs_silences_item() -> None:
    check(
        "torch._dynamo.config.capture_scalar_outputs = True\n"
        + module("s = x.sum().item()\nreturn x + s\n")
    )


def test_tolist_float_and_int_ids() -> None:
    check(module("v = x.tolist()  # HINT\nreturn x\n"), "tensor-tolist", "GB0109")
    check(module("v = x.argmax(-1).tolist()  # HINT\nreturn x\n"), "tensor-tolist", "GB0033")


def test_tensor_to_python_scalar() -> None:
    check(
        module(
            """
            a = int(x.sum())  # HINT
            b = float(x.mean())  # HINT
            c = math.floor(x.max())  # HINT
            return x
            """
        ),
        "tensor-to-python-scalar",
    )


def test_int_of_shape_is_silent() -> None:
    check(module("n = int(x.shape[-1])\nr = math.sqrt(x.size(-1))\nreturn x / r * n\n"))


def test_in_test_on_tensor() -> None:
    check(module("if 0 in x:  # HINT\n    x = x + 1\nreturn x\n"), "tensor-to-python-scalar")


def test_numpy_to_python() -> None:
    check(
        module(
            """
            a = x.detach().cpu().numpy()
            v = a.tolist()  # HINT
            return x
            """
        ),
        "numpy-to-python",
        "GB0109",
    )
    check(module("a = x.numpy()\nm = float(np.mean(a))  # HINT\nreturn x\n"), "numpy-to-python")


def test_numpy_traced_on_tensors_is_silent() -> None:
    check(
        module(
            """
            a = x.detach().cpu().numpy()
            o = np.argsort(a, axis=-1)
            return torch.from_numpy(np.clip(a, 0, 1)), torch.from_numpy(o)
            """
        )
    )


def test_data_dependent_branch_if_while_ifexp() -> None:
    check(
        module(
            """
            if x.sum() > 0:  # HINT
                x = x + 1
            while x.norm() > 1:  # HINT
                x = x / 2
            y = x if x.mean() > 0 else -x  # HINT
            return y
            """
        ),
        "data-dependent-branch",
        "GB0170",
    )


def test_branch_in_boolop_flags_the_tensor_operand() -> None:
    src = snippet(module("if x is not None and x.any():\n    x = -x\nreturn x\n"))
    (h,) = analyze_source(src, "/ws/m.py")
    line = src.splitlines()[h.line - 1]
    assert line[h.column - 1 : h.end_column - 1] == "x.any()"


def test_branch_on_int_param_and_shapes_is_silent() -> None:
    check(
        module(
            """
            if n > 0 and x.dim() == 2 and x.shape[0] > 1:
                x = x * n
            if x is None or self.training or x.numel() == 0:
                return x
            assert x.size(0) > 0, "empty"
            return x
            """,
            params="x, n: int",
        )
    )


def test_branch_on_example_provided_number_is_silent() -> None:
    check(
        module("if scale > 1:\n    x = x * scale\nreturn x\n", params="x, scale")
        + """
def compile_example():
    return M(), (torch.randn(2, 4), 2.0)
"""
    )


def test_assert_with_computed_message_breaks_but_plain_assert_does_not() -> None:
    check(module("assert x.sum() > 0, 'negative'\nreturn x\n"))
    check(
        module("assert x.sum() > 0, f'got {x.shape}'  # HINT\nreturn x\n"),
        "data-dependent-branch",
    )


def test_data_dependent_bool_op() -> None:
    check(
        module("if torch.equal(x, x):  # HINT\n    x = x + 1\nreturn x\n"),
        "data-dependent-bool-op",
        "GB0033",
    )
    check(module("if torch.is_tensor(x) and x.is_floating_point():\n    x = x + 1\nreturn x\n"))


def test_dynamic_shape_ops() -> None:
    check(
        module(
            """
            a = torch.nonzero(x)  # HINT
            b = x.unique()  # HINT
            c = torch.masked_select(x, x > 0)  # HINT
            d = torch.where(x > 0)  # HINT
            e = x[x > 0]  # HINT
            m = x.isnan()
            f = x[m]  # HINT
            return a, b, c, d, e, f
            """
        ),
        "dynamic-shape-op",
        "GB0036",
    )


def test_fixed_shape_alternatives_are_silent() -> None:
    check(
        module(
            """
            a = torch.where(x > 0, x, -x)
            b = torch.nonzero_static(x, size=4)
            x[x > 0] = 0
            idx = torch.tensor([0, 1])
            return a, b, x[idx], x.masked_fill(x > 0, 0.0)
            """
        )
    )


def test_one_hot() -> None:
    check(module("return F.one_hot(x)  # HINT\n"), "one-hot-no-num-classes", "GB0246")
    check(module("return F.one_hot(x, num_classes=4)\n"))


def test_explicit_graph_break() -> None:
    check(
        module("torch._dynamo.graph_break()  # HINT\nreturn x\n"), "explicit-graph-break", "GB0025"
    )


def test_compiler_disabled_call() -> None:
    check(
        """
@torch.compiler.disable
def stats(t):
    return t.mean()
"""
        + module("stats(x)  # HINT\nreturn x\n"),
        "compiler-disabled-call",
        "GB0098",
    )


def test_wall_clock_and_datetime() -> None:
    check(module("t = time.perf_counter()  # HINT\nreturn x\n"), "wall-clock", "GB0007")
    check(module("t = datetime.datetime.now()  # HINT\nreturn x\n"), "datetime-now", "GB0156")


def test_python_random() -> None:
    check(module("p = random.random()  # HINT\nreturn x * p\n"), "python-random", "GB0007")
    # random.uniform/randint with constant arguments are traced by Dynamo.
    check(module("p = random.uniform(0.5, 1.5)\nreturn x * p\n"))


def test_numpy_random() -> None:
    check(
        module("m = np.random.binomial(1, 0.5, size=(2,))  # HINT\nreturn x\n"),
        "numpy-random-unsupported",
        "GB0294",
    )
    check(module("p = np.random.rand()  # HINT\nreturn x * p\n"), "numpy-random-scalar", "GB0033")
    check(module("n = np.random.randn(4, 4)\nnp.random.seed(0)\nreturn x\n"))


def test_file_io() -> None:
    check(
        module(
            """
            fh = open("/tmp/x.txt", "w")  # HINT
            torch.save(x, "/tmp/x.pt")  # HINT
            sys.stdout.write("x")  # HINT
            e = os.path.exists("/tmp")  # HINT
            return x
            """
        ),
        "file-io",
    )
    check(module("p = os.path.join('a', 'b')\nh = os.environ.get('HOME')\nreturn x\n"))


def test_debugger() -> None:
    check(module("breakpoint()  # HINT\nreturn x\n"), "debugger", "GB0059")
    check(module("pdb.set_trace()  # HINT\nreturn x\n"), "debugger", "GB0007")


def test_non_torch_library() -> None:
    check(
        "import scipy.special\n" + module("y = scipy.special.expit(x)  # HINT\nreturn y\n"),
        "non-torch-library",
        "GB0156",
    )


def test_deepcopy_and_string_conversion() -> None:
    check(module("y = copy.deepcopy(x)  # HINT\nreturn y\n"), "deepcopy", "GB4198")
    check(module("s = str(x)  # HINT\nreturn x\n"), "tensor-to-string", "GB0059")
    check(module("s = repr(x)  # HINT\nreturn x\n"), "tensor-to-string", "GB0569")
    check(module("s = 'v=%s' % x  # HINT\nreturn x\n"), "tensor-to-string")
    check(module("s = f'{x.shape} {x}'\nt = '{}'.format(x.dtype)\nreturn x\n"))


def test_backward_autograd_and_meta_mutation() -> None:
    check(module("x.sum().backward()  # HINT\nreturn x\n"), "tensor-backward", "GB0123")
    check(module("g = torch.autograd.grad(x.sum(), x)  # HINT\nreturn g\n"), "autograd-grad")
    check(
        module("y = x * 2\ny.requires_grad_()  # HINT\nreturn y\n"),
        "tensor-meta-mutation",
        "GB8985",
    )
    check(module("x.requires_grad = True  # HINT\nreturn x\n"), "tensor-meta-mutation", "GB0206")


def test_module_construction_in_forward() -> None:
    check(module("lin = nn.Linear(4, 4)  # HINT\nreturn lin(x)\n"), "module-construction", "GB0264")
    check(module("act = nn.ReLU()\nreturn act(x)\n"))  # no parameters: traced fine


def test_rnn_module_call() -> None:
    check(
        module("out, h = self.rnn(x)  # HINT\nreturn out\n", init="self.rnn = nn.GRU(4, 4)\n"),
        "rnn",
        "GB0014",
    )


def test_class_definition_and_frame_inspection() -> None:
    check(module("class Tmp:  # HINT\n    pass\nreturn x\n"), "class-definition", "GB8977")
    check(module("f = sys._getframe()  # HINT\nreturn x\n"), "frame-inspection", "GB0007")


# ---- every rule: positive in forward; negative when unreachable or under is_compiling() ------

# One statement per rule that breaks the graph when traced (x is a tensor), and its GB id
# (as torch reports it for that statement; bench/static/verify_gb_ids.py checks them for real).
POSITIVE: dict[str, tuple[str, str | None]] = {
    "print-call": ("print(x.shape)", "GB0059"),
    "logger-call": ("logger.info('x')", "GB0291"),
    "logging-module-call": ("logging.info('x')", "GB4841"),
    "warnings-call": ("warnings.warn('x')", "GB0007"),
    "tensor-item": ("s = x.sum().item()", "GB0124"),
    "tensor-tolist": ("v = x.tolist()", "GB0109"),
    "tensor-to-python-scalar": ("n = int(x.sum())", "GB0124"),
    "numpy-to-python": ("v = x.numpy().tolist()", "GB0109"),
    "data-dependent-branch": ("y = 1 if x.sum() > 0 else 2", "GB0170"),
    "data-dependent-bool-op": ("b = torch.allclose(x, x)", "GB0033"),
    "dynamic-shape-op": ("n = x.nonzero()", "GB0036"),
    "one-hot-no-num-classes": ("o = F.one_hot(x)", "GB0246"),
    "explicit-graph-break": ("torch._dynamo.graph_break()", "GB0025"),
    "compiler-disabled-call": ("off(x)", "GB0098"),
    "wall-clock": ("t = time.time()", "GB0007"),
    "datetime-now": ("t = datetime.datetime.now()", "GB0156"),
    "python-random": ("p = random.random()", "GB0007"),
    "numpy-random-unsupported": ("m = np.random.permutation(4)", "GB0294"),
    "numpy-random-scalar": ("p = np.random.rand()", "GB0033"),
    "file-io": ("fh = open('/tmp/x')", "GB0059"),
    "debugger": ("breakpoint()", "GB0059"),
    "non-torch-library": ("import cv2; cv2.blur(x, (3, 3))", None),  # reason varies
    "deepcopy": ("y = copy.deepcopy(x)", "GB4198"),
    "tensor-to-string": ("s = repr(x)", "GB0569"),
    "tensor-backward": ("x.sum().backward()", "GB0123"),
    "autograd-grad": ("g = torch.autograd.grad(x.sum(), x)", "GB9186"),
    "tensor-meta-mutation": ("x.resize_(4)", "GB0126"),
    "module-construction": ("p = nn.Parameter(torch.ones(2))", "GB0264"),
    "rnn": ("out, h = self.rnn(x)", "GB0014"),
    "class-definition": ("class Tmp: pass", "GB8977"),
    "frame-inspection": ("f = sys._getframe()", "GB0007"),
}
PRELUDE = """
@torch.compiler.disable
def off(t):
    return t


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 4)

    def forward(self, x):
"""


def test_every_rule_has_a_positive_case() -> None:
    assert set(POSITIVE) == set(RULES)


def test_every_rule_is_a_registered_check_and_every_check_a_rule() -> None:
    from dynamo_lens.static import events
    from dynamo_lens.static.walker import Walker  # noqa: F401  (registers the checks)

    listening = events.registered()
    assert set(listening) == set(RULES), set(RULES) ^ set(listening)
    with pytest.raises(KeyError, match="no rule"):
        events.check("no-such-rule", events.BUILTIN)


@pytest.mark.parametrize("rule", sorted(POSITIVE))
def test_rule_positive(rule: str) -> None:
    stmt, gb = POSITIVE[rule]
    src = snippet(PRELUDE + f"        {stmt}\n        return x\n")
    got = [(h.data["rule"], h.gb_id) for h in analyze_source(src, "/ws/m.py")]
    assert got == [(rule, gb)]


@pytest.mark.parametrize("rule", sorted(POSITIVE))
def test_rule_negative_when_unreachable(rule: str) -> None:
    # The same statement in a helper that no target calls, and in __init__.
    src = snippet(
        PRELUDE
        + "        return x\n\n"
        + f"    def unused(self, x):\n        {POSITIVE[rule][0]}\n        return x\n\n\n"
        + f"def helper(x):\n    {POSITIVE[rule][0]}\n    return x\n"
    )
    assert analyze_source(src, "/ws/m.py") == []


@pytest.mark.parametrize("rule", sorted(POSITIVE))
def test_rule_negative_when_not_compiling(rule: str) -> None:
    body = f"        if not torch.compiler.is_compiling():\n            {POSITIVE[rule][0]}\n"
    src = snippet(PRELUDE + body + "        return x\n")
    assert analyze_source(src, "/ws/m.py") == []


def test_analyze_tree_matches_analyze_source() -> None:
    src = snippet(module("print(x)\ns = x.sum().item()\nreturn x\n"))
    assert analyze_tree(ast.parse(src), src, "/ws/m.py") == analyze_source(src, "/ws/m.py")


def test_lines_match_the_tokenizer_with_form_feeds_and_line_separators() -> None:
    src = snippet('"""doc\u2028still doc\x0c"""\n' + module("s = x.item()\nreturn x\n"))
    (h,) = analyze_source(src, "/ws/m.py")
    line = src.split("\n")[h.line - 1]
    assert line[h.column - 1 : h.end_column - 1] == "x.item()"
    assert h.stack[-1].code == "s = x.item()"


def test_internal_error_gives_no_hints_and_is_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(self: object) -> None:
        raise KeyError("bug")

    monkeypatch.setattr(analyze_mod.Analyzer, "run", boom)
    assert analyze_source(snippet(module("print(x)\nreturn x\n")), "/ws/m.py") == []
    assert "static analysis failed" in caplog.text
