"""The ``mark-dynamic`` rules (fixes/dynamic.py), without torch: the example that builds the
calls marks the recompiling dimension dynamic in each of them, and nothing else is edited;
``maybe-mark-dynamic`` is the same marking, tried next, for a size the code singles out."""

from __future__ import annotations

import ast
from collections.abc import Callable

import pytest
from dynamo_lens.findings import Finding, Kind, Severity
from dynamo_lens.fixes.catalogue import propose

SRC = """import torch
from torch import nn


class Rows(nn.Module):
    def forward(self, x, n):
        return x * n


def compile_example():
    model = Rows()
    return [(model, (torch.randn(k, 8), 2)) for k in (4, 6)]  # variants
"""


def _recompile(**data: object) -> Finding:
    f = Finding(Kind.RECOMPILE, Severity.INFORMATION, "/ws/m.py", 6, 5, 6, 20, "m")
    f.target = "compile_example"
    f.data = {"mark_dynamic": {"variable": "x", "dim": 0, "arg": 0}, **data}  # type: ignore[typeddict-item]
    return f


def _only(f: Finding, src: str = SRC) -> str:
    first, then = propose(f, src, in_workspace=True)
    assert first.rule == "mark-dynamic" and first.exact and not first.module_wide
    # Tried second, the same lines with the API that lets torch specialise where it must.
    assert then.rule == "maybe-mark-dynamic" and then.exact and then.edits_calls
    fixed = first.apply(src)
    assert then.apply(src) == fixed.replace("mark_dynamic(", "maybe_mark_dynamic(")
    ast.parse(fixed)
    return fixed


def test_every_call_the_example_returns_is_marked_and_returned_as_before() -> None:
    fixed = _only(_recompile())
    assert fixed == SRC.replace(
        "    return [(model, (torch.randn(k, 8), 2)) for k in (4, 6)]  # variants\n",
        "    # variants\n"  # the statement's comment is kept, above it
        "    __calls = [(model, (torch.randn(k, 8), 2)) for k in (4, 6)]\n"
        "    for __call in __calls if isinstance(__calls, list) else [__calls]:\n"
        "        torch._dynamo.mark_dynamic(__call[1][0], 0)\n"
        "    return __calls\n",
    )


def test_one_call_and_a_crlf_file_keep_their_form() -> None:
    src = SRC.replace(
        "[(model, (torch.randn(k, 8), 2)) for k in (4, 6)]", "model, (torch.randn(4, 8), 2)"
    ).replace("\n", "\r\n")
    fixed = _only(_recompile(), src)
    assert "\r\n    __calls = model, (torch.randn(4, 8), 2)\r\n" in fixed
    assert fixed.count("\n") == fixed.count("\r\n")  # every line still ends in CRLF


def _keyword() -> Finding:
    return _recompile(mark_dynamic={"variable": "x", "dim": 0})


def _break() -> Finding:
    f = _recompile()
    f.kind = Kind.GRAPH_BREAK
    return f


def _guess() -> Finding:
    f = _recompile()
    f.target = "Rows (guess)"
    return f


def _library() -> Finding:
    return _recompile(library="lib.py:3")


def _other_file() -> Finding:
    f = _recompile()
    f.target = "other.py::compile_example"
    return f


TWO_RETURNS = SRC.replace(
    "    model = Rows()\n", "    model = Rows()\n    if model is None:\n        return []\n"
)


@pytest.mark.parametrize(
    ("why", "finding", "src"),
    [
        ("passed neither by position nor by keyword in every call", _keyword, SRC),
        ("a break, not a recompile", _break, SRC),
        ("a guard inside a library", _library, SRC),
        ("a guessed target has no call site", _guess, SRC),
        ("two returns: which calls are the example's is the user's logic", _recompile, TWO_RETURNS),
        (
            "the return shares its line",
            _recompile,
            SRC.replace("    return [", "    k = 1; return ["),
        ),
        ("no example in this file", _recompile, SRC.replace("def compile_example", "def build")),
        (
            "the example defined twice",
            _recompile,
            SRC + "\n\ndef compile_example():\n    return []\n",
        ),
        ("the target's example is another file's", _other_file, SRC),
    ],
)
def test_refused(why: str, finding: Callable[[], Finding], src: str) -> None:
    rules = [r.rule for r in propose(finding(), src, in_workspace=True)]
    assert "mark-dynamic" not in rules and "maybe-mark-dynamic" not in rules, why


def test_sizes_that_vary_with_it_are_marked_with_it() -> None:
    also = [{"arg": 1, "dim": 0}, {"keyword": "m", "dim": 2}]
    md = {"variable": "x", "dim": 0, "arg": 0, "also": also}
    fixed = _only(_recompile(mark_dynamic=md))
    assert (
        "        torch._dynamo.mark_dynamic(__call[1][0], 0)\n"
        "        torch._dynamo.mark_dynamic(__call[1][1], 0)\n"
        "        torch._dynamo.mark_dynamic(__call[2]['m'], 2)\n"
        "    return __calls\n"
    ) in fixed, fixed
    # One that cannot be written (no position, no identifier): the whole marking is refused.
    bad = {**md, "also": [{"keyword": "a b", "dim": 0}]}
    assert not propose(_recompile(mark_dynamic=bad), SRC, in_workspace=True)


def test_a_tensor_inside_a_container_argument_is_marked_at_its_keys() -> None:
    md = {"variable": "batch['ids']", "dim": 1, "arg": 0, "path": ["ids", 0]}
    fixed = _only(_recompile(mark_dynamic=md))
    assert "        torch._dynamo.mark_dynamic(__call[1][0]['ids'][0], 1)\n" in fixed, fixed
    # A key that is neither a string nor an int is not written.
    for odd in ([1.5], [True], "ids"):
        bad = _recompile(mark_dynamic={**md, "path": odd})
        assert not propose(bad, SRC, in_workspace=True), odd


def test_an_argument_passed_by_keyword_is_marked_in_the_kwargs_of_each_call() -> None:
    md = {"variable": "x", "dim": 0, "keyword": "x"}
    fixed = _only(_recompile(mark_dynamic=md))
    assert "        torch._dynamo.mark_dynamic(__call[2]['x'], 0)\n" in fixed, fixed
    # A keyword that is no identifier is not written into the file.
    odd = _recompile(mark_dynamic={**md, "keyword": "x']); import os; os.system('"})
    assert not propose(odd, SRC, in_workspace=True)


def test_only_the_targets_own_entries_are_marked_where_the_example_returns_several() -> None:
    md = {"variable": "x", "dim": 0, "arg": 0, "calls": [0, 2]}
    fixed = _only(_recompile(mark_dynamic=md))
    assert (
        "    for __call in [__calls[__i] for __i in (0, 2)] if isinstance(__calls, list) "
        "else [__calls]:\n"
    ) in fixed, fixed
    one = _only(_recompile(mark_dynamic={**md, "calls": [1]}))
    assert "[__calls[__i] for __i in (1,)]" in one, one


SCALARS = """import torch
from torch import nn


class Scale(nn.Module):
    def forward(self, x, t, n):
        return x / t + n


def compile_example():
    model = Scale()
    return [(model, (torch.randn(4), t, n)) for t, n in ((0.5, 1), (0.7, 2))]  # variants
"""


class _Torch:  # the rewrite's own lines, run without torch: tensor() records its request
    float64, int64 = "float64", "int64"

    @staticmethod
    def tensor(v: object, dtype: object) -> tuple[str, object, object]:
        return ("tensor", v, dtype)

    @staticmethod
    def randn(*shape: int) -> str:
        return "x"


def _run_example(fixed: str) -> object:
    """The rewritten ``compile_example`` of SCALARS, run with ``_Torch``: the calls it builds."""
    body = fixed.split("def compile_example():\n", 1)[1]
    ns: dict[str, object] = {}
    exec("def compile_example():\n" + body.replace("Scale()", "'model'"), {"torch": _Torch}, ns)
    return ns["compile_example"]()  # type: ignore[operator]


def test_a_python_number_is_passed_as_a_0d_tensor_of_pythons_precision() -> None:
    """The example passes the number as a 0-d tensor, float64 for a float and int64 for an
    int (what Python's own number gives in arithmetic), in this target's entries only; the
    result is run here: the calls come back in the same form, the number now a tensor."""
    f = Finding(Kind.RECOMPILE, Severity.INFORMATION, "/ws/m.py", 7, 9, 7, 20, "m")
    f.target = "compile_example"
    f.data = {"scalar_arg": {"variable": "t", "arg": 1, "calls": [1]}}
    (rw,) = [r for r in propose(f, SCALARS, in_workspace=True) if r.rule == "scalar-tensor"]
    assert rw.exact and "`t` as a 0-d tensor" in rw.title and "callers elsewhere" in rw.title
    fixed = rw.apply(SCALARS)
    ast.parse(fixed)
    calls = _run_example(fixed)
    assert calls == [
        ("model", ("x", 0.5, 1)),  # not this target's entry: left as it was
        ("model", ("x", ("tensor", 0.7, "float64"), 2)),
    ]


def test_a_python_number_passed_by_keyword_is_passed_as_a_0d_tensor_by_keyword() -> None:
    src = SCALARS.replace("(torch.randn(4), t, n))", "(torch.randn(4),), {'t': t, 'n': n})")
    f = Finding(Kind.RECOMPILE, Severity.INFORMATION, "/ws/m.py", 7, 9, 7, 20, "m")
    f.target = "compile_example"
    f.data = {"scalar_arg": {"variable": "t", "keyword": "t"}}
    (rw,) = [r for r in propose(f, src, in_workspace=True) if r.rule == "scalar-tensor"]
    fixed = rw.apply(src)
    calls = _run_example(fixed)
    assert calls == [
        ("model", ("x",), {"t": ("tensor", 0.5, "float64"), "n": 1}),
        ("model", ("x",), {"t": ("tensor", 0.7, "float64"), "n": 2}),
    ]
