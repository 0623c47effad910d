"""Parsing torch's own texts (break reasons, recompile reasons) in the worker's modules."""

from __future__ import annotations

from pathlib import Path

import pytest
from dynamo_lens.engine.locate import Workspace


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
