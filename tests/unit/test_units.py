"""Unit tests of the pure pieces: protocol framing, config validation, source ranges,
recompile-reason parsing, graph-break message parsing, report formats."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import msgpack
import pytest
from dynamo_lens.config import Config, apply, load
from dynamo_lens.findings import (
    FileResult,
    Finding,
    Frame,
    Kind,
    Severity,
    TargetId,
    TargetReport,
    dedupe,
    from_wire,
    to_wire,
)
from dynamo_lens.report import jsonout, sarif, text
from dynamo_lens.texts.locate import Workspace, expression_span, parameter_span
from dynamo_lens.texts.source import decode_source, syntax_error
from dynamo_lens.wire import Channel, ChannelClosed


def _channel_pair() -> tuple[Channel, Channel]:
    a_r, b_w = os.pipe()
    b_r, a_w = os.pipe()
    return Channel(a_r, a_w), Channel(b_r, b_w)


def test_protocol_round_trip_large_and_many_messages() -> None:
    a, b = _channel_pair()
    # 3 MB in many texts arrives whole; one 3 MB text arrives cut, with a marker.
    big = {"op": "analyze", "id": 1, "params": {"blobs": ["x" * 10_000] * 300, "n": [1, 2.5]}}
    huge = {"op": "analyze", "id": 2, "params": {"blob": "y" * 3_000_000}}
    t = threading.Thread(
        target=lambda: [a.send(big), a.send(huge), *(a.send({"id": i}) for i in range(500))]
    )
    t.start()
    assert b.recv() == big
    cut = b.recv()["params"]["blob"]
    assert len(cut) < 20_000 and cut.endswith("(truncated, 3000000 bytes)")
    assert [b.recv()["id"] for _ in range(500)] == list(range(500))
    t.join()
    a.close()
    with pytest.raises(ChannelClosed):
        b.recv()


def test_protocol_rejects_non_map() -> None:
    r, w = os.pipe()
    import msgpack

    os.write(w, msgpack.packb([1, 2, 3]))
    os.close(w)
    chan = Channel(r, os.open(os.devnull, os.O_WRONLY))
    with pytest.raises(ChannelClosed, match="expected a map"):
        chan.recv()


def test_config_bad_values_fall_back_with_a_message(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.dynamo-lens]\ntimeout = -3\ndevices = ["tpu"]\nmode = "reduce-overhead"\n'
        'checks = ["breaks"]\nbogus = 1\n'
    )
    cfg, problems = load(tmp_path)
    assert cfg.timeout == Config().timeout
    assert cfg.devices == ["auto"]
    assert cfg.mode == "reduce-overhead"
    assert cfg.checks == ["breaks"]
    assert len(problems) == 3
    assert any("'timeout' has bad value -3" in p for p in problems)
    assert any("unknown setting 'bogus'" in p for p in problems)


def test_config_editor_settings_override_and_accept_camel_case() -> None:
    cfg, problems = apply(
        Config(), {"workerCount": 2, "checksOnSave": ["breaks"], "dynamic": None}, "s"
    )
    assert problems == []
    assert cfg.workers == 2 and cfg.checks_on_save == ["breaks"] and cfg.dynamic is None


def test_broken_pyproject_is_reported_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.dynamo-lens\n")
    cfg, problems = load(tmp_path)
    assert cfg == Config()
    assert problems and "cannot read pyproject.toml" in problems[0]


def test_expression_span_prefers_the_named_call(tmp_path: Path) -> None:
    p = tmp_path / "m.py"
    p.write_text("def f(x):\n    y = x.sum().item() + 1\n    if x.mean() > 0:\n        pass\n")
    s = expression_span(str(p), 2, "item")
    assert (s.line, s.column, s.end_column) == (2, 9, 23)  # x.sum().item()
    s = expression_span(str(p), 3)
    assert (s.column, s.end_column) == (8, 20)  # x.mean() > 0
    s = parameter_span(str(p), 1, "x")
    assert (s.line, s.column, s.end_column) == (1, 7, 8)


def test_workspace_excludes_libraries(tmp_path: Path) -> None:
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    ws = Workspace(tmp_path, [".venv"])
    assert ws.contains(tmp_path / "a.py")
    assert not ws.contains(tmp_path / ".venv" / "lib" / "x.py")
    assert not ws.contains("/usr/lib/python3/dist-packages/torch/nn.py")
    assert not ws.contains("<string>")


def test_non_utf8_and_coding_cookie() -> None:
    text, err = decode_source("a.py", b"x = 1\ny = '\xe9'\n")
    assert text is None and err is not None and err.line == 2
    text, err = decode_source("a.py", b"# -*- coding: latin-1 -*-\ny = '\xe9'\n")
    assert err is None and text is not None and "\u00e9" in text


def test_syntax_error_range() -> None:
    f = syntax_error("a.py", "def f(:\n    pass\n")
    assert f is not None and f.line == 1 and f.kind == Kind.ERROR


def _finding(**kw: object) -> Finding:
    base: dict[str, object] = dict(
        kind=Kind.GRAPH_BREAK,
        severity=Severity.WARNING,
        path="/w/m.py",
        line=3,
        column=5,
        end_line=3,
        end_column=9,
        message="Graph break: x",
        gb_id="GB0170",
        doc_url="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html",
        stack=[Frame("/w/a.py", 10, "forward", 9, 10, 20), Frame("/w/m.py", 3, "helper", 5, 3, 9)],
        target="m.py::compile_example",
    )
    base.update(kw)
    return Finding(**base)  # type: ignore[arg-type]


def test_finding_round_trip_and_dedupe() -> None:
    f = _finding()
    assert from_wire(json.loads(json.dumps(to_wire(f))), Finding) == f
    info = _finding(severity=Severity.INFORMATION)
    assert dedupe([info, f]) == [f]
    rep = TargetReport("t", "/w/m.py", 1, "example", findings=[f])
    assert from_wire(to_wire(rep), TargetReport) == rep
    res = FileResult("/w/m.py", "h", reports=[rep], findings=[f])
    assert from_wire(msgpack.unpackb(msgpack.packb(to_wire(res))), FileResult) == res


def test_target_ids_parse_and_print() -> None:
    t = TargetId.parse("models/cnn.py::compile_example[2]")
    assert (t.file, t.unit, t.variant, t.short) == (
        "models/cnn.py",
        "compile_example",
        2,
        "compile_example[2]",
    )
    assert str(t) == "models/cnn.py::compile_example[2]"
    assert TargetId.parse("compile_example") == TargetId("", "compile_example", None)
    assert str(TargetId("m.py", "guess:Net")) == "m.py::guess:Net"


def test_reports_render_every_format() -> None:
    res = FileResult(
        "/w/m.py", "h", reports=[TargetReport("t", "/w/m.py", 1, "example", findings=[_finding()])]
    )
    line = text.render([res], Path("/w")).splitlines()[0]
    assert line == "m.py:3:5: warning: Graph break: x [GB0170]"
    doc = jsonout.document([res], {"torch": "2.13.0"})
    assert doc["version"] == 1 and doc["findings"][0]["gb_id"] == "GB0170"
    assert set(doc["findings"][0]) >= {
        "kind",
        "severity",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "message",
        "explanation",
        "hints",
        "gb_id",
        "doc_url",
        "stack",
        "target",
        "device",
    }
    s = sarif.document([res], Path("/w"))
    assert s["version"] == "2.1.0"
    run = s["runs"][0]
    assert run["tool"]["driver"]["rules"][0]["id"] == "GB0170"
    assert run["tool"]["driver"]["rules"][0]["helpUri"].endswith("gb0170.html")
    r = run["results"][0]
    assert r["level"] == "warning"
    loc = r["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "m.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 3, "startColumn": 5, "endLine": 3, "endColumn": 9}
    assert r["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "a.py"


def test_mark_dynamic_fix_simple_and_variants() -> None:
    from dynamo_lens.fixes import quick as fixes

    simple = "def compile_example():\n    x = torch.randn(4, 8)\n    return model, (x,)\n"
    e = fixes.mark_dynamic(simple, 0, 0)
    assert e is not None and e.line == 3 and e.end_line is None
    assert e.text == "    torch._dynamo.mark_dynamic(x, 0)\n"
    variants = (
        "def compile_example():\n"
        "    m = M()\n"
        "    return [(m, (torch.randn(b, 8),)) for b in (4, 5)]\n"
    )
    e = fixes.mark_dynamic(variants, 0, 1)
    assert e is not None and (e.line, e.end_line) == (3, 3)
    lines = variants.splitlines(keepends=True)
    patched = "".join(lines[:2]) + e.text
    ns: dict[str, object] = {}
    compile(patched, "p.py", "exec")  # the rewrite is valid Python
    assert "torch._dynamo.mark_dynamic(call[1][0], 1)" in e.text
    assert ns == {}


def test_add_compile_example_skeleton() -> None:
    from dynamo_lens.fixes import quick as fixes

    src = "class Net(nn.Module):\n    def __init__(self):\n        self.fc = nn.Linear(16, 4)\n"
    assert fixes.module_classes_without_example(src) == [("Net", 1)]
    e = fixes.add_compile_example(src, "Net")
    assert e is not None and "torch.randn(8, 16)" in e.text and "def compile_example" in e.text
    compile(src + e.text, "n.py", "exec")


def test_edits_move_findings_and_mark_edited_lines_stale() -> None:
    from dynamo_lens.server.documents import shift_findings

    old = "a\nb\nc\nd\n"
    new = "new\na\nb\nC\nd\n"  # a line inserted above, line c edited
    fs = [_finding(path="/w/m.py", line=n, end_line=n) for n in (1, 3, 4)]
    moved = shift_findings(fs, old, new, "/w/m.py")
    assert [(f.line, bool(f.data.get("stale"))) for f in moved] == [
        (2, False),
        (4, True),
        (5, False),
    ]
    gone = shift_findings(fs, old, "a\nb\nd\n", "/w/m.py")
    assert [f.line for f in gone] == [1, 3]  # the finding on the deleted line is dropped


def test_a_publish_sends_what_the_file_shows_when_sent_not_when_asked() -> None:
    """Restricted Mode flaked in CI: the hint pass (its own thread) read a file's empty view,
    the syntax check then published the error, and the hint pass's older view went out last."""
    from collections.abc import Callable

    from dynamo_lens.server.documents import Documents, Shown

    queued: list[tuple[str, Callable[[], Shown]]] = []
    docs = Documents(lambda path, shown: queued.append((path, shown)))
    doc = docs.get("/w/m.py")
    docs.publish(doc)  # asked for before the error was known
    err = _finding(path="/w/m.py", line=2, end_line=2)
    doc.findings, doc.version = [err], 3
    docs.publish(doc)
    sent = [shown() for _, shown in queued]  # the event loop sends them in this order
    assert sent[-1] == ([err], 3) and sent[0] == sent[-1]
    docs.clear("/w/m.py")
    assert queued[-1][1]() == ([], None)


def test_bundled_libraries_go_after_the_users_site_packages(tmp_path: Path) -> None:
    from dynamo_lens.engine import pool as workerpool

    bundle = os.path.dirname(workerpool._PKG_PARENT)
    libs = os.path.join(bundle, "libs")
    user = str(tmp_path / "mine")
    keep, fallback = workerpool._split_bundle(os.pathsep.join([workerpool._PKG_PARENT, libs, user]))
    assert keep == [user]
    assert fallback == [libs]


def test_our_own_source_is_never_user_code(tmp_path: Path) -> None:
    """A workspace that holds Dynamo Lens's own checkout: its modules and frames stay ours."""
    import dynamo_lens

    pkg = Path(dynamo_lens.__file__).resolve().parent
    ws = Workspace(pkg.parent.parent)
    assert not ws.contains(str(pkg / "findings.py"))
    assert not ws.contains(str(pkg / "worker" / "jobs.py"))
