"""Static hints: every rule fires where Dynamo breaks and stays silent where it does not.

Snippets mark the lines that must get a hint with ``# HINT``; any other hint fails the test.
Each positive case mirrors a snippet whose break (and GB id) was checked with real torch
(``bench/static/RESULTS.md``); negatives are the usual false-alarm traps.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from dynamo_lens.findings import Finding, Kind, Severity, from_wire, to_wire
from dynamo_lens.static import (
    RULES,
    analyze_path,
    analyze_source,
    analyze_tree,
    reachable_functions,
)
from dynamo_lens.static import analyzer as analyze_mod

HEADER = """\
import copy
import datetime
import logging
import math
import os
import pdb
import random
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger(__name__)
"""


def _src(body: str) -> str:
    return HEADER + textwrap.dedent(body)


def hints_for(body: str, path: str = "/ws/model.py"):  # type: ignore[no-untyped-def]
    return analyze_source(_src(body), path)


def check(body: str, rule: str | None = None, gb: str | None = None) -> None:
    """Hints exactly on the ``# HINT`` lines (with ``rule``/``gb`` when given), nowhere else."""
    src = _src(body)
    expected = {i for i, ln in enumerate(src.splitlines(), 1) if ln.rstrip().endswith("# HINT")}
    found = analyze_source(src, "/ws/model.py")
    got = {h.line for h in found}
    detail = [(h.line, h.data["rule"], h.gb_id, h.message) for h in found]
    assert got == expected, detail
    for h in found:
        if rule is not None:
            assert h.data["rule"] == rule, detail
        if gb is not None:
            assert h.gb_id == gb, detail


def module(forward_body: str, params: str = "x", init: str = "", extra: str = "") -> str:
    """A module whose forward runs ``forward_body`` (a zero-configuration target)."""
    init_body = textwrap.indent(textwrap.dedent(init), " " * 8) if init.strip() else ""
    fwd = textwrap.indent(textwrap.dedent(forward_body), " " * 8)
    return (
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 4)\n"
        f"{init_body}"
        f"    def forward(self, {params}):\n"
        f"{fwd}"
        f"{textwrap.dedent(extra)}"
    )


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
    src = _src(module("if x is not None and x.any():\n    x = -x\nreturn x\n"))
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


# ---- reachability and targets ------------------------------------------------------------------


def test_helpers_reached_through_methods_functions_and_module_lists() -> None:
    check(
        """
def peak(w):
    return w / w.abs().max().item()  # HINT


def unused(w):
    return w.item()


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        print("block")  # HINT
        return self._inner(self.fc(x))

    def _inner(self, h):
        if h.mean() > 0:  # HINT
            h = -h
        return peak(h)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(2)])

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


def compile_example():
    return Net(), (torch.randn(2, 4),)
"""
    )


def test_targets_from_decorator_and_compile_call() -> None:
    check(
        """
@torch.compile
def f(x):
    return x.sum().item()  # HINT


def g(x):
    print(x.shape)  # HINT
    return x


def h(x):
    print("never compiled")
    return x


class M(nn.Module):
    def forward(self, x):
        return x.tolist()  # HINT


g_compiled = torch.compile(g)
model = torch.compile(M().eval())
"""
    )


def test_compile_example_list_and_kwargs() -> None:
    src = """
def scale(x, factor):
    if factor > 1:
        x = x * factor
    return x


def other(x):
    print(x)


def compile_example():
    cases = []
    for f in (1.0, 2.0):
        cases.append((scale, (torch.randn(3),), {"factor": f}))
    return cases
"""
    check(src)
    funcs = reachable_functions(_src(src), "/ws/m.py")
    assert funcs == {"scale": {"scale"}}


def test_tensor_typed_helper_in_a_file_without_targets() -> None:
    # Such helpers are called from models in other files.
    check(
        """
def center(x: torch.Tensor) -> torch.Tensor:
    if x.mean() > 0:  # HINT
        x = x - x.mean()
    return x


def accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    return (logits.argmax(-1) == y).float().mean().item()


def train_epoch(model, x: torch.Tensor):
    print(model(x).item())
"""
    )


def test_nested_function_sees_closure_values_and_checkpoint_reaches_callee() -> None:
    check(
        """
from torch.utils.checkpoint import checkpoint


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def _block(self, h):
        return h.tolist()  # HINT

    def forward(self, x):
        y = self.fc(x)

        def inner():
            return y.item()  # HINT

        z = inner()
        return checkpoint(self._block, y), z
"""
    )


def test_super_forward_and_constant_false_attribute() -> None:
    check(
        """
class Base(nn.Module):
    def forward(self, x):
        return x.sum().item()  # HINT


class Child(Base):
    def __init__(self):
        super().__init__()
        self.verbose = False

    def forward(self, x):
        if self.verbose:
            print("never: verbose is a constant False")
        return super().forward(x)


def compile_example():
    return Child(), (torch.randn(3),)
"""
    )


def test_annotated_and_defaulted_params_are_not_tensors() -> None:
    check(
        module(
            "if flag and k > 2 and name == 'a' and p > 0.5:\n    x = -x\nreturn x\n",
            params="x, flag: bool = False, k: int = 3, name: str = 'a', p=0.1",
        )
    )


def test_unknown_values_stay_silent() -> None:
    check(
        """
from mylib import make_thing


class M(nn.Module):
    def forward(self, x, cfg=None):
        thing = make_thing()
        if thing.ready():
            x = x + 1
        if cfg:
            x = x * 2
        return x
"""
    )


def test_frame_skip_after_break_in_loop_or_try() -> None:
    # After a break inside a loop (GB7000) or a try body, Dynamo runs the rest of the frame
    # eagerly, so later constructs are not separate breaks.
    check(
        module(
            """
            for i in range(2):
                print(i)  # HINT
                if x.sum() > 0:
                    x = x + 1
            return x.sum().item()
            """
        )
    )
    check(
        module("try:\n    print('a')  # HINT\nexcept ValueError:\n    pass\nprint('b')\nreturn x\n")
    )
    src = _src(module("for i in range(2):\n    print(i)\nreturn x\n"))
    (h,) = analyze_source(src, "/ws/m.py")
    assert h.data["in_loop"] and "GB7000" in h.explanation


def test_breaks_in_both_branches_both_reported() -> None:
    check(
        module(
            """
            if self.training:
                print("train")  # HINT
            else:
                print("eval")  # HINT
            return x
            """
        )
    )


# ---- the finding itself ------------------------------------------------------------------------


def test_finding_shape() -> None:
    src = _src(module("s = x.sum().item()\nreturn x + s\n"))
    (h,) = analyze_source(src, "/ws/model.py")
    assert h.kind is Kind.STATIC_HINT
    assert h.severity in (Severity.HINT, Severity.INFORMATION)
    assert h.path == "/ws/model.py"
    assert h.message.startswith("Likely graph break:")
    assert h.data["rule"] == "tensor-item" and h.data["likely"] is True
    assert h.data["function"] == "M.forward" and h.data["target"] == "M" and h.target == "M"
    assert h.gb_id == "GB0124"
    assert h.doc_url == "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html"
    line = src.splitlines()[h.line - 1]
    assert line[h.column - 1 : h.end_column - 1] == "x.sum().item()"
    assert h.stack and h.stack[-1].line == h.line
    assert h.hints and h.explanation
    assert from_wire(json.loads(json.dumps(to_wire(h))), Finding) == h


def test_columns_count_characters_not_bytes() -> None:
    src = _src(module("s = 'héllo'; v = x.sum().item()\nreturn x\n"))
    (h,) = analyze_source(src, "/ws/m.py")
    line = src.splitlines()[h.line - 1]
    assert line[h.column - 1 : h.end_column - 1] == "x.sum().item()"


def test_stack_shows_call_chain_from_target() -> None:
    src = _src(
        """
def helper(t):
    return t.item()


class M(nn.Module):
    def forward(self, x):
        return helper(x.sum())
"""
    )
    (h,) = analyze_source(src, "/ws/m.py")
    assert [f.name for f in h.stack] == ["M.forward", "helper"]
    assert h.stack[0].code == "return helper(x.sum())"


def test_syntax_error_and_bad_encoding_give_nothing(tmp_path: Path) -> None:
    assert analyze_source("def f(:\n", "/ws/m.py") == []
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"x = '\xff\xfe'\n")
    assert analyze_path(bad) == []
    assert analyze_path(tmp_path / "missing.py") == []
    good = tmp_path / "good.py"
    good.write_text(_src(module("print(x)\nreturn x\n")), encoding="utf-8")
    assert [h.data["rule"] for h in analyze_path(good)] == ["print-call"]


def test_every_rule_has_message_hint_and_known_gb_id() -> None:
    ids: set[str] = set()
    for r in RULES.values():
        assert r.message.startswith("Likely graph break: ") and r.hint and r.explanation
        if r.gb_id:
            ids.add(r.gb_id)
    for src in Path(analyze_mod.__file__).parent.rglob("*.py"):
        ids |= set(re.findall(r'"(GB\d{4})"', src.read_text()))
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        pytest.skip("torch not installed: registry unavailable")
    reg_path = Path(spec.origin).parent / "_dynamo" / "graph_break_registry.json"
    if not reg_path.exists():
        pytest.skip("this torch has no graph-break registry")
    registry = json.loads(reg_path.read_text())
    assert ids and ids <= set(registry), ids - set(registry)


def test_static_package_never_imports_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from dynamo_lens.static import analyze_source\n"
        "src = 'import torch\\nclass M(torch.nn.Module):\\n    def forward(self, x):\\n"
        "        return x.item()\\n'\n"
        "assert [h.data['rule'] for h in analyze_source(src, 'm.py')] == ['tensor-item']\n"
        "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_any_over_tensor_conditions_and_zero_dim_index() -> None:
    check(
        module("if any(t.max() > 1 for t in (x, x)):  # HINT\n    x = -x\nreturn x\n"),
        "data-dependent-branch",
    )
    check(module("i = x.argmax()\nreturn x.flatten()[i]  # HINT\n"), "tensor-to-python-scalar")
    check(module("i = x.argmax(dim=-1)\nreturn x[i], any([1, 2])\n"))


def test_modules_called_through_comprehension_variables() -> None:
    check(
        """
class Head(nn.Module):
    def forward(self, x):
        return x.tolist()  # HINT


class Multi(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([Head() for _ in range(2)])

    def forward(self, x):
        outs = [h(x) for h in self.heads]
        return outs


def compile_example():
    return Multi(), (torch.randn(2),)
"""
    )


def test_python_list_indexed_by_tensor() -> None:
    check(
        module("t = [1.0, 2.0]\nreturn x + t[x.argmax() % 2]  # HINT\n"), "tensor-to-python-scalar"
    )
    check(module("t = [1.0, 2.0]\nreturn x + t[0] + t[-1]\n"))


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
    src = _src(PRELUDE + f"        {stmt}\n        return x\n")
    got = [(h.data["rule"], h.gb_id) for h in analyze_source(src, "/ws/m.py")]
    assert got == [(rule, gb)]


@pytest.mark.parametrize("rule", sorted(POSITIVE))
def test_rule_negative_when_unreachable(rule: str) -> None:
    # The same statement in a helper that no target calls, and in __init__.
    src = _src(
        PRELUDE
        + "        return x\n\n"
        + f"    def unused(self, x):\n        {POSITIVE[rule][0]}\n        return x\n\n\n"
        + f"def helper(x):\n    {POSITIVE[rule][0]}\n    return x\n"
    )
    assert analyze_source(src, "/ws/m.py") == []


@pytest.mark.parametrize("rule", sorted(POSITIVE))
def test_rule_negative_when_not_compiling(rule: str) -> None:
    body = f"        if not torch.compiler.is_compiling():\n            {POSITIVE[rule][0]}\n"
    src = _src(PRELUDE + body + "        return x\n")
    assert analyze_source(src, "/ws/m.py") == []


def test_analyze_tree_matches_analyze_source() -> None:
    src = _src(module("print(x)\ns = x.sum().item()\nreturn x\n"))
    assert analyze_tree(ast.parse(src), src, "/ws/m.py") == analyze_source(src, "/ws/m.py")


def test_lines_match_the_tokenizer_with_form_feeds_and_line_separators() -> None:
    src = _src('"""doc\u2028still doc\x0c"""\n' + module("s = x.item()\nreturn x\n"))
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
    assert analyze_source(_src(module("print(x)\nreturn x\n")), "/ws/m.py") == []
    assert "static analysis failed" in caplog.text
