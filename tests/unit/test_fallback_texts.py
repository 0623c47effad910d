"""Fallbacks and compile cost read without torch: the words of a break that makes torch run code
eagerly, a CUDA-graph skip and a cache bypass in a trace, guards in the user's names, breaks
credited to their own compiled frame."""

from __future__ import annotations

from pathlib import Path

from dynamo_lens.findings import Frame, Kind, Severity
from dynamo_lens.runs.command import trace_results
from dynamo_lens.texts import breaktext, guards
from support.hostile import metrics, one_break, record, workspace, write


def test_a_data_dependent_op_is_named_by_its_operator_not_fake_tensor_internals() -> None:
    parsed = breaktext.parse_reason(
        "Dynamic shape operator\n"
        "  Explanation: Operator `aten.nonzero.default`'s output shape depends on input Tensor "
        "data.\n"
        "  Hint: Enable tracing of dynamic shape operators with "
        "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`\n"
    )
    text, kind, _ = breaktext.headline(parsed, Frame("/w/m.py", 3, "route"))
    assert text == "Graph break: dynamic shape operator (aten.nonzero)"
    assert kind == Kind.GRAPH_BREAK
    scalar = breaktext.parse_reason(
        "Data dependent operator\n  Explanation: Operator `aten._local_scalar_dense.default` "
        "has a non-Tensor output whose value is dependent on the data of Tensor inputs.\n"
    )
    assert breaktext.operator(scalar) == ".item()"


def test_a_hint_written_for_torch_developers_becomes_what_a_user_can_do() -> None:
    parsed = breaktext.parse_reason(
        "Unsupported next() call\n  Explanation: Dynamo does not know how to trace calling "
        "next() on this object.\n  Hint: Add tp_iternext_impl to this VariableTracker "
        "subclass.\n",
        ids={"Unsupported next() call": "GB4347"},
    )
    assert parsed.hints and "VariableTracker" not in " ".join(parsed.hints)
    assert parsed.hints[0].startswith("Iterate over a list or a tensor")


def test_torchs_skip_of_a_whole_function_is_a_fallback_with_its_cause() -> None:
    parsed = breaktext.parse_reason(
        "Failed to handle graph break gracefully. Skipping the function and falling back to "
        "eager. Graph break encountered:\n\nData-dependent branching\n  Explanation: Detected "
        "data-dependent branching.\n",
        ids={"Data-dependent branching": "GB0170"},
    )
    assert parsed.fallback == "skipped" and parsed.gb_id == "GB0170"
    f = breaktext.finding(Frame("/w/m.py", 5, "step"), parsed, None, [])
    assert f.kind == Kind.FALLBACK and f.severity == Severity.WARNING
    assert f.message.startswith("Falls back to eager: torch skipped step()")
    assert f.is_break  # still a break: it counts where breaks count


def test_a_disabled_call_is_information_naming_the_function() -> None:
    parsed = breaktext.parse_reason(
        "Skip calling `torch.compiler.disable()`d function\n  Explanation: Skip calling "
        "function `<function eager_helper at 0x7f0>` since it was wrapped with "
        "`torch.compiler.disable` (reason: None)\n"
    )
    f = breaktext.finding(Frame("/w/m.py", 5, "step"), parsed, None, [])
    assert (f.kind, f.severity) == (Kind.FALLBACK, Severity.INFORMATION)
    assert "eager_helper() is torch.compiler.disable'd" in f.message


def test_a_guard_on_a_value_carried_across_a_break_is_not_worded_as_torchs_slot() -> None:
    g = guards.classify("L['___stack0'] == 3")
    assert "carried across a graph break" in guards.what(g)
    assert "mark_dynamic" not in guards.fix(g) and "___stack0" not in guards.fix(g)
    plain = guards.classify("L['n'] == 3")
    assert guards.what(plain) == "the Python value of `n`"
    # A float's exponent is part of the value (it read as no value's: "eps == Ne-N").
    exp = guards.classify("L['eps'] == 1e-05")
    assert (exp.kind, exp.var, exp.seen) == ("value", "eps", "1e-05")
    assert guards.classify("L['lr'] == -2.5E+3").seen == "-2.5E+3"


def _trace(tmp_path: Path, *lines: str) -> Path:
    folder = tmp_path / "trace"
    folder.mkdir()
    write(folder / "dedicated_log_torch_trace_abc.log", lines)
    return folder


def test_a_cuda_graph_skip_in_a_trace_is_a_fallback_on_the_function(tmp_path: Path) -> None:
    """What mode="reduce-overhead" records when it cannot use CUDA graphs (the CUDA test in
    tests/worker/test_cuda.py makes torch write one)."""
    ws = workspace(tmp_path)
    reason = "skipping cudagraphs due to cpu device (arg0_1). Found from : File ..."
    folder = _trace(
        tmp_path,
        metrics(co_filename=str(ws / "train.py"), cudagraph_skip_reason=reason),
    )
    run = trace_results([folder], ws, [], "test")
    (f,) = [f for r in run.results for f in r.findings]
    assert (f.kind, f.severity, f.line) == (Kind.FALLBACK, Severity.WARNING, 4)
    assert f.data["fallback"] == "cudagraphs"
    assert f.message.startswith("Runs without CUDA graphs: skipping cudagraphs due to cpu device")


def test_a_cache_bypass_names_its_cache_and_reason_on_the_function(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    bypass = record(
        {
            "artifact": {"name": "aotautograd_cache_bypass", "encoding": "json"},
            "frame_id": 0,
            "frame_compile_id": 0,
            "attempt": 0,
            "has_payload": "1",
        },
        [
            '{"cache_bypass_reason": "Unsupported call_function target <function '
            '_enter_autocast at 0x7f2b055f7ce0>. ", "cache_state": "bypass"}'
        ],
    )
    folder = _trace(tmp_path, bypass, metrics(co_filename=str(ws / "train.py")))
    run = trace_results([folder], ws, [], "test")
    (f,) = [f for r in run.results for f in r.findings]
    assert (f.kind, f.severity, f.line) == (Kind.FALLBACK, Severity.INFORMATION, 4)
    assert f.message == (
        "Compiles cold every time: AOTAutograd's cache bypassed: Unsupported call_function "
        "target <function _enter_autocast>."
    )
    assert "autocast" in f.hints[0]


def test_a_frame_torch_failed_to_compile_runs_eagerly(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    folder = _trace(
        tmp_path,
        metrics(
            co_filename=str(ws / "train.py"),
            fail_type="BackendCompilerFailed",
            fail_reason="backend='inductor' raised: RuntimeError: boom",
        ),
    )
    run = trace_results([folder], ws, [], "test")
    (f,) = [f for r in run.results for f in r.findings]
    assert f.kind == Kind.FALLBACK and f.data["fallback"] == "failed"
    assert f.message.startswith("Falls back to eager: torch.compile failed on step()")


def test_breaks_at_one_line_in_two_frames_credit_each_frame(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    train = str(ws / "train.py")
    lines = []
    for frame, name in ((0, "a"), (1, "b")):
        lines.append(one_break(ws, frame_id=frame))
        lines.append(metrics(frame, co_filename=train, co_name=name, co_firstlineno=10 + frame))
    run = trace_results([_trace(tmp_path, *lines)], ws, [], "test")
    reports = {r.target: r.break_count for res in run.results for r in res.reports}
    assert reports == {"train.py::a@10": 1, "train.py::b@11": 1}


COST = {
    "functions": [
        {"name": "expensive", "path": "/ws/m.py", "line": 44, "seconds": 1.2, "library": False},
        {"name": "cheap", "path": "/ws/m.py", "line": 40, "seconds": 0.01, "library": False},
    ],
    "total": 1.21,
}


def test_the_hover_and_the_verbose_report_show_compile_time_costliest_first() -> None:
    from dynamo_lens.report.text import compile_time_line
    from dynamo_lens.server.summary import compile_time_rows

    rows = compile_time_rows(COST)
    assert "Dynamo compile time **1.21 s** by compiled function (costliest first):" in rows
    assert rows[-4:-2] == ["| `expensive` | m.py:44 | 1.20 s |", "| `cheap` | m.py:40 | 0.01 s |"]
    # The check compiles without torch's guard-latency profile: the hover says so.
    assert "guard-latency profile" in rows[-1]
    line = compile_time_line(COST, Path("/ws"))
    assert (
        line
        == "Dynamo compile 1.21 s, by function: expensive (m.py:44) 1.20 s, cheap (m.py:40) 0.01 s"
    )
    assert compile_time_rows(0) == [] and compile_time_line(None, Path("/ws")) == ""
