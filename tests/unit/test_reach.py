"""What a unit can reach, from the source alone: the key under which its result is reused after
an edit (static/reach.py), and reused findings moved with the text (engine/reuse.py)."""

from __future__ import annotations

from pathlib import Path

from dynamo_lens.engine.reuse import UnitResult, moved
from dynamo_lens.findings import Finding, Frame, Kind, Severity, TargetReport
from dynamo_lens.static.reach import Reachability

MODEL = """\
import torch
from torch import nn

from helpers import h1

SCALE = 2


def unused(x):
    return x - 1


class Net(nn.Module):
    def forward(self, x):
        return h1(x) * SCALE


class Other(nn.Module):
    def forward(self, x):
        return x + 1


def compile_example():
    return Net(), (torch.ones(2),)


def compile_example_other():
    return Other(), (torch.ones(2),)
"""
HELPERS = """\
import torch


def h1(x):
    return torch.tanh(x)


def h2(x):
    return x
"""


def _ws(tmp_path: Path, model: str = MODEL, helpers: str = HELPERS) -> Path:
    (tmp_path / "model.py").write_text(model)
    (tmp_path / "helpers.py").write_text(helpers)
    return tmp_path


def _key(ws: Path, unit: str = "compile_example") -> str:
    return Reachability(ws).of(str(ws / "model.py"), unit).key


def test_an_edit_elsewhere_keeps_the_key_and_one_in_reach_changes_it(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    before, other = _key(ws), _key(ws, "compile_example_other")
    (ws / "model.py").write_text(MODEL.replace("return x - 1", "return x - 2"))
    assert _key(ws) == before  # `unused` is reached by no unit
    (ws / "model.py").write_text(MODEL.replace("return x + 1", "return x + 3"))
    assert _key(ws) == before and _key(ws, "compile_example_other") != other
    (ws / "model.py").write_text(MODEL.replace("* SCALE", "* SCALE * 1"))
    assert _key(ws) != before and _key(ws, "compile_example_other") == other


def test_a_module_level_constant_or_import_counts_for_every_unit(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    before, other = _key(ws), _key(ws, "compile_example_other")
    (ws / "model.py").write_text(MODEL.replace("SCALE = 2", "SCALE = 3"))
    assert _key(ws) != before and _key(ws, "compile_example_other") != other
    (ws / "model.py").write_text(MODEL.replace("import torch\n", "import math\nimport torch\n"))
    assert _key(ws) != before


def test_only_the_helper_functions_reached_count(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    before = _key(ws)
    (ws / "helpers.py").write_text(HELPERS.replace("return x\n", "return x * 1\n"))
    assert _key(ws) == before  # h2 is nobody's
    (ws / "helpers.py").write_text(HELPERS.replace("torch.tanh(x)", "torch.sigmoid(x)"))
    assert _key(ws) != before


def test_what_module_level_code_names_is_reached(tmp_path: Path) -> None:
    """``model = Net()`` at import makes Net's code part of a unit that returns ``model``."""
    src = (
        MODEL
        + "\nMODEL = Net()\n\n\ndef compile_example_global():\n    return MODEL, (torch.ones(2),)\n"
    )
    ws = _ws(tmp_path, src)
    before = _key(ws, "compile_example_global")
    (ws / "helpers.py").write_text(HELPERS.replace("torch.tanh(x)", "torch.sigmoid(x)"))
    assert _key(ws, "compile_example_global") != before


def test_a_computed_getattr_makes_the_whole_module_count(tmp_path: Path) -> None:
    src = MODEL.replace(
        "def compile_example():\n    return Net(), (torch.ones(2),)",
        "def compile_example():\n    name = 'Net'\n"
        "    return getattr(nn, name)(), (torch.ones(2),)",
    )
    ws = _ws(tmp_path, src)
    r = Reachability(ws).of(str(ws / "model.py"), "compile_example")
    assert "getattr()" in r.uncertain
    assert {s.name for s in r.spans} >= {"Net", "Other", "unused", "compile_example_other"}


def test_a_registering_decorator_counts_for_every_unit(tmp_path: Path) -> None:
    src = MODEL.replace("def unused(x):", "@register\ndef unused(x):")
    ws = _ws(tmp_path, "REGISTRY = []\nregister = REGISTRY.append\n" + src)
    before = _key(ws)
    text = (ws / "model.py").read_text().replace("return x - 1", "return x - 2")
    (ws / "model.py").write_text(text)
    assert _key(ws) != before


def test_lines_added_above_move_the_spans_not_the_key(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    r0 = Reachability(ws).of(str(ws / "model.py"), "compile_example")
    (ws / "model.py").write_text(MODEL.replace("SCALE = 2\n", "SCALE = 2\n# a note\n\n", 1))
    r1 = Reachability(ws).of(str(ws / "model.py"), "compile_example")
    assert r1.key == r0.key  # a comment and a blank line: no statement changed
    net0 = next(s for s in r0.spans if s.name == "Net")
    net1 = next(s for s in r1.spans if s.name == "Net")
    assert net1.start == net0.start + 2


def test_a_reused_result_moves_with_its_definition(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    model = str(ws / "model.py")
    r0 = Reachability(ws).of(model, "compile_example")
    net = next(s for s in r0.spans if s.name == "Net")
    line = net.start + 2  # `return h1(x) * SCALE`
    f = Finding(Kind.GRAPH_BREAK, Severity.WARNING, model, line, 9, line, 20, "Graph break: x")
    f.stack = [Frame(model, line, "forward"), Frame(str(ws / "helpers.py"), 5, "h1")]
    report = TargetReport("model.py::compile_example", model, 24, "example", findings=[f])
    (ws / "model.py").write_text(MODEL.replace("def unused(x):\n", "def unused(x):\n    # hm\n"))
    r1 = Reachability(ws).of(model, "compile_example")
    got = moved(UnitResult(r0, [report], []), r1.spans)
    assert got is not None
    (g,) = got.reports[0].findings
    assert (g.line, g.end_line, g.stack[0].line, g.stack[1].line) == (
        line + 1,
        line + 1,
        line + 1,
        5,
    )
    assert got.reports[0].line == 25
