"""Static hints: which functions are reached from a target (methods, helpers, module lists,
decorators, compile calls, closures, super), the finding itself (its fields, columns, stack,
wire form) and files that cannot be read.

Snippets mark the lines that must get a hint with ``# HINT``; any other hint fails the test.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from dynamo_lens.findings import Finding, Kind, Severity, from_wire, to_wire
from dynamo_lens.static import (
    RULES,
    analyze_path,
    analyze_source,
    reachable_functions,
)
from dynamo_lens.static import analyzer as analyze_mod
from support.static_snippets import check, module, snippet

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
    funcs = reachable_functions(snippet(src), "/ws/m.py")
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
    src = snippet(module("for i in range(2):\n    print(i)\nreturn x\n"))
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
    src = snippet(module("s = x.sum().item()\nreturn x + s\n"))
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
    src = snippet(module("s = 'héllo'; v = x.sum().item()\nreturn x\n"))
    (h,) = analyze_source(src, "/ws/m.py")
    line = src.splitlines()[h.line - 1]
    assert line[h.column - 1 : h.end_column - 1] == "x.sum().item()"


def test_stack_shows_call_chain_from_target() -> None:
    src = snippet(
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
    good.write_text(snippet(module("print(x)\nreturn x\n")), encoding="utf-8")
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
