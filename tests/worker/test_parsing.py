"""Parsing torch's own texts (break reasons, recompile reasons) in the worker's modules."""

from __future__ import annotations

from pathlib import Path

import pytest
from dynamo_lens.texts.locate import Workspace


def test_recompile_reason_parsing(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from dynamo_lens.worker.recompiles import classify, parse_recompile

    m = tmp_path / "m2.py"
    m.write_text("def fb(x, n):\n    x = x\n    for i in range(n):\n        x = x + i\n")
    ws = Workspace(tmp_path)
    metrics = {"co_filename": str(m), "co_firstlineno": 1, "co_name": "fb"}
    rc = parse_recompile(
        f"0/1: n == 2  # for i in range(n):  # {str(m)[-12:]}:3 in fb (_dynamo/x.py:1 in y)",
        metrics,
        [str(m)],
        ws,
    )
    assert (rc.guard.kind, rc.guard.var, rc.line, rc.located) == ("value", "n", 3, True)
    rc = parse_recompile(
        "0/0: tensor 'x' size mismatch at index 0. expected 8, actual 9", metrics, [], ws
    )
    assert (rc.guard.kind, rc.guard.dim, rc.guard.seen, rc.located) == ("size", 0, "9", False)
    assert classify("tensor 'x' dtype mismatch. expected Float, actual Double").kind == "dtype"
    assert classify("mask is None").kind == "none"
    assert classify("len(xs) == 2").kind == "len"
    assert classify("L['self'].max_seq == 16").kind == "attr"
    assert classify("2 <= x.size()[0] <= 8").kind == "size-range"


def test_graph_break_message_parsing() -> None:
    pytest.importorskip("torch")
    from dynamo_lens.worker.breaks import parse_reason

    text = (
        "Encountered graph break when attempting to trace CALL: a function call:\n\n"
        "Unsupported Tensor.item() call with capture_scalar_outputs=False\n"
        "  Explanation: Dynamo does not support tracing `Tensor.item()`.\n"
        "  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True`\n"
        "    to include these operations.\n\n"
        "  Developer debug context: call_method TensorVariable() item () {}\n\n"
        " For more details about this graph break, please visit: "
        "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html"
    )
    p = parse_reason(text)
    assert p.gb_type == "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    assert p.gb_id == "GB0124"
    assert p.explanation.startswith("Dynamo does not support")
    assert p.hints == [
        "Set `torch._dynamo.config.capture_scalar_outputs = True` to include these operations."
    ]


def test_the_graph_breaks_log_gives_the_structured_traces_break_records(tmp_path: Path) -> None:
    """find_breaks reads torch's graph_breaks log, not the costlier structured trace: both must
    carry the same breaks, with the same exception (gb_type, real_stack) current."""
    torch = pytest.importorskip("torch")
    from dynamo_lens.worker.breaks import collect_sites
    from dynamo_lens.worker.tracecapture import GraphBreakLog, TraceCapture

    src = tmp_path / "m.py"
    src.write_text(
        "import torch\n"
        "def f(x):\n"
        "    x = x + 1\n"
        "    if x.sum() > 0:\n"
        "        x = x * 2\n"
        "    print('hi')\n"
        "    torch._dynamo.graph_break()\n"
        "    return x - 1\n"
    )
    import importlib.util

    spec = importlib.util.spec_from_file_location("m_gb", src)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ws = Workspace(tmp_path)
    torch._dynamo.reset()
    with TraceCapture() as trace, GraphBreakLog() as log:
        out = torch._dynamo.explain(mod.f)(torch.ones(3))
    from_trace = trace.of("artifact", "dynamo_graph_break_reason")
    from_log = log.of("artifact", "dynamo_graph_break_reason")
    assert len(from_trace) == len(from_log) >= 3
    assert [e.exc for e in from_trace] == [e.exc for e in from_log]
    lines = lambda cap: sorted(s.frames[-1].line for s in collect_sites(out, cap, ws))  # noqa: E731
    assert lines(log) == lines(trace) == [4, 6, 7]


def test_messages_keep_class_names_and_drop_torchs_prefixes() -> None:
    pytest.importorskip("torch")
    from dynamo_lens.worker.breaks import _message

    assert _message("TypeError when making fake tensor call") == (
        "Graph break: TypeError when making fake tensor call"
    )
    assert _message("Graph Break Reason: Unsupported call.") == "Graph break: unsupported call"
    assert _message("Data-dependent branching") == "Graph break: data-dependent branching"
    assert (
        _message("Unsupported Tensor.item() call") == "Graph break: unsupported Tensor.item() call"
    )


def test_the_cause_is_the_headline_not_the_loop_break() -> None:
    pytest.importorskip("torch")
    from dynamo_lens.findings import Frame
    from dynamo_lens.worker.breaks import Parsed, Site, _merge_same_line

    at = Frame("/w/m.py", 5, "f", 1, 5, 9)
    loop = Site(
        [at], at, None, Parsed("Graph break in loop", "", [], "GB7000"), sources={"explain"}
    )
    cause = Site(
        [at], at, None, Parsed("Data-dependent branching", "x", [], "GB0170"), sources={"trace"}
    )
    (merged,) = _merge_same_line([loop, cause])
    assert merged.parsed.gb_id == "GB0170"
    # The loop break is the consequence: torch then skips the function, which the headline says.
    assert merged.parsed.fallback == "loop" and "GB7000" not in merged.parsed.explanation


def test_recompile_reasons_in_2_13_and_2_8_wording(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from dynamo_lens.worker.recompiles import classify, parse_recompile, user_name

    # torch 2.13: a tensor guard that now sees None
    g = classify("expected type of 'mask' to be a tensor type, ' but found <class 'NoneType'>")
    assert (g.kind, g.var, g.seen) == ("none", "mask", "None")
    # torch 2.8 puts the hint on the guard's own line
    m = tmp_path / "r.py"
    m.write_text("class R:\n    def forward(self, x):\n        if self.n > 8:\n            pass\n")
    ws = Workspace(tmp_path)
    metrics = {"co_filename": str(m), "co_firstlineno": 2, "co_name": "forward"}
    rc = parse_recompile(
        f"0/0: L['self'].n == 16   # if self.n > 8:  # {m.name}:3 in forward (HINT: make it "
        "dynamic with torch._dynamo.config.allow_unspec_int_on_nn_module = True)",
        metrics,
        [str(m)],
        ws,
    )
    assert rc is not None
    assert (rc.guard.kind, rc.guard.var, rc.line) == ("attr", "self.n", 3)
    assert "allow_unspec_int_on_nn_module" in rc.torch_hint
    # a wrapper's *args (transformers' decorators) named by the target's own parameters
    assert user_name("args[1]", ["input_ids", "attention_mask"]) == "attention_mask"
    assert user_name("kwargs['labels'].size()", ["input_ids"]) == "labels.size()"
    assert user_name("args[0]", ["args"]) == "args[0]"


def test_older_torch_breaks_get_the_registrys_ids() -> None:
    pytest.importorskip("torch")
    from dynamo_lens.worker import torchcompat
    from dynamo_lens.worker.breaks import parse_reason

    # The shipped table (from a newer torch) covers ids an older registry lacks.
    assert torchcompat.registry()["Data-dependent branching"] == "GB0170"
    p = parse_reason(
        "logger not supported for non-export cases. To avoid graph breaks caused by logger in "
        "compile-mode, it is recommended to disable logging"
    )
    assert p.gb_id == "GB0291"
    assert p.gb_type == "logging.Logger method not supported for non-export cases"
    assert p.explanation.startswith("logger not supported")
