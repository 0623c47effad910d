"""Fault injection: user code that breaks in every way gets one clear error at the right line,
and the next target in the same run is analysed normally."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, check_json, markers, scratch

FAULTS = FIXTURES / "faults"


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    _, doc, _ = check_json(str(FAULTS))
    return doc


def _errors(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if Path(f["path"]).name == name and f["kind"] == "error"]


def _healthy_target_ran(doc: dict[str, Any], name: str) -> None:
    good = f"{name}::compile_example_good"
    targets = [t for t in doc["targets"] if t["target"] == good]
    assert targets, f"the healthy target after the fault in {name} was not analysed"
    assert targets[0]["graph_count"] == 1
    assert [f for f in doc["findings"] if f["target"] == good] == []


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("raises.py", "ValueError: user bug in forward"),
        ("hangs.py", "timed out after 10 s"),
        ("exits.py", "os._exit(7)"),
        ("segfaults.py", "segmentation fault"),
        ("allocates.py", "over the memory limit"),
    ],
)
def test_fault_in_one_target_reports_its_line_and_the_next_target_runs(
    report: dict[str, Any], name: str, words: str
) -> None:
    errors = _errors(report, name)
    expected_line = markers(FAULTS / name)[0]
    hits = [e for e in errors if words in e["message"]]
    assert len(hits) == 1, errors
    assert hits[0]["line"] == expected_line
    assert hits[0]["severity"] == "error"
    assert hits[0]["target"] == f"{name}::compile_example_bad"
    _healthy_target_ran(report, name)


def test_huge_single_allocation_is_an_exception_at_its_line(report: dict[str, Any]) -> None:
    errors = [
        e
        for e in _errors(report, "allocates.py")
        if e["target"] == "allocates.py::compile_example_huge"
    ]
    assert len(errors) == 1
    assert errors[0]["line"] == markers(FAULTS / "allocates.py")[1]
    assert "can't allocate memory" in errors[0]["message"]


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("syntax_error.py", "SyntaxError"),
        ("missing_module.py", "ModuleNotFoundError"),
        ("not_utf8.py", "not valid utf-8"),
    ],
)
def test_file_level_faults(report: dict[str, Any], name: str, words: str) -> None:
    errors = _errors(report, name)
    assert len(errors) == 1, errors
    assert words in errors[0]["message"]
    assert errors[0]["line"] == markers(FAULTS / name)[0]


def test_prints_never_reach_the_protocol(report: dict[str, Any]) -> None:
    assert _errors(report, "prints.py") == []
    target = next(t for t in report["targets"] if t["target"] == "prints.py::compile_example")
    assert target["graph_count"] == 1


def test_every_file_was_reported(report: dict[str, Any]) -> None:
    names = {Path(f["path"]).name for f in report["findings"]}
    assert {"raises.py", "hangs.py", "exits.py", "segfaults.py", "allocates.py"} <= names


# A model whose first call breaks (the print) and whose second declared call stops the job in
# the recompile check: it hangs past the job's limit, or crashes the worker.
STOPS_LATER = """import ctypes
import time

import torch


class Model(torch.nn.Module):
    def forward(self, x):
        print("a break")  # break-line
        if x.shape[0] == 3:
            FAULT  # fault-line
        return x * 2


def compile_example():
    model = Model().eval()
    return [(model, (torch.randn(n, 4),)) for n in (2, 3)]
"""
_FAULTS_LATER = {
    "hang": ("time.sleep(3600)", "timed out after 30 s"),
    "crash": ("ctypes.string_at(0)", "segmentation fault"),
}


@pytest.mark.parametrize("fault", sorted(_FAULTS_LATER))
def test_a_job_stopped_in_a_later_check_keeps_what_the_earlier_found(fault: str) -> None:
    code, words = _FAULTS_LATER[fault]
    ws = scratch("dl-stopped-")
    (ws / "pyproject.toml").write_text(
        '[tool.dynamo-lens]\nbackend = "eager"\ntimeout = 30\nchecks = ["breaks", "recompiles"]\n'
    )
    path = ws / "model.py"
    path.write_text(STOPS_LATER.replace("FAULT", code))
    _, doc, err = check_json(str(ws), "--fixes", "verify", "--verbose")
    errors = _errors(doc, "model.py")
    assert len(errors) == 1, errors
    said = errors[0]["message"]
    assert said.startswith("Analysis stopped in the recompile check of compile_example: "), said
    assert words in said, said
    assert errors[0]["line"] == markers(path)[0]
    assert "checks that finished before it stopped are shown" in errors[0]["explanation"]
    # The break the graph-break check found before the job was stopped is still reported.
    breaks = [f for f in doc["findings"] if f["kind"] == "graph_break"]
    assert [(b["line"], b["target"]) for b in breaks] == [
        (markers(path, "break-line")[0], "model.py::compile_example")
    ]
    [report] = [t for t in doc["targets"] if t["target"] == "model.py::compile_example"]
    assert report["checks"] == ["breaks"] and report["break_count"] == 1, report
    # No rewrite of it is verified, and none is tried: verifying runs the same calls.
    tried = breaks[0]["data"]["fixes"]
    assert tried and not any(f["verified"] for f in tried), tried
    assert not [line for line in err.splitlines() if line.startswith("dynamo-lens: verify ")], err


TWO_MODELS = """import ctypes

import torch


class Talker(torch.nn.Module):
    def forward(self, x):
        print("a break")
        return x * 2


class Crasher(torch.nn.Module):
    def forward(self, x):
        ctypes.string_at(0)  # fault-line
        return x


def compile_example():
    return [(Talker(), (torch.randn(2, 4),)), (Crasher(), (torch.randn(2, 4),))]
"""


def test_one_target_asked_for_of_a_stopped_job_is_that_one_or_none() -> None:
    """Asked for one entry of an example (a benchmark's code lens), a job the other entry
    stopped gives that entry's report where it finished, and never the other's. The entry
    that finished keeps its verified fix: verifying it runs none of the other's calls."""
    from dynamo_lens.config import load
    from dynamo_lens.engine.analysis import Engine
    from dynamo_lens.engine.fixing import fixes_for

    ws = scratch("dl-stopped-one-")
    path = ws / "two.py"
    path.write_text(TWO_MODELS)
    cfg, _ = load(ws, {"backend": "eager", "checks": ["breaks"]})
    with Engine(ws, cfg) as engine:
        for asked, kept in (
            ("compile_example[0]", ["two.py::compile_example[0]"]),
            ("compile_example[1]", []),
        ):
            res = engine.analyze_file(path, ["breaks"], only_target=asked)
            assert res.stopped and [r.target for r in res.reports] == kept, (asked, res.reports)
            [err] = res.findings
            assert err.message.startswith(
                "Analysis stopped in the graph-break check of compile_example[1]: the worker "
                "crashed"
            ), err.message
            assert err.line == markers(path)[0]
        [fix] = fixes_for(engine, engine.analyze_file(path, ["breaks"]))
        assert fix.targets == ["two.py::compile_example[0]"] and fix.verified, fix.why
