"""Every SARIF document we write validates against the SARIF 2.1.0 JSON schema (OASIS's, as
Microsoft's SARIF SDK ships it; scripts/setup_python.sh fetches it from the npm registry):
the reviewed check report, a gated run (``baselineState``), every recorded trace, a fix, an
error and a library frame. No torch."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import REPO
from dynamo_lens.cli import main
from dynamo_lens.findings import FileResult, Finding, Frame, Kind, Severity, TargetReport
from dynamo_lens.report import fingerprint, sarif
from dynamo_lens.runs.command import trace_results

SCHEMA = REPO / ".tools" / "sarif" / "sarif-schema-2.1.0.json"
GOLDEN = REPO / "tests" / "golden"


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    # Not a skip: without the schema this test would prove nothing and must say so.
    assert SCHEMA.is_file(), f"{SCHEMA} is missing: run scripts/setup_python.sh"
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _valid(validator: jsonschema.protocols.Validator, doc: Any) -> None:
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:10]
    )


def test_the_reviewed_check_report_is_valid_sarif(
    validator: jsonschema.protocols.Validator,
) -> None:
    doc = json.loads((GOLDEN / "check" / "example_workspace.sarif").read_text())
    assert doc["runs"][0]["results"], "the golden report has results to validate"
    _valid(validator, doc)
    # The schema does reject: a bad level and a run without its tool.
    doc["runs"][0]["results"][0]["level"] = "severe"
    assert len(list(validator.iter_errors(doc))) == 1
    assert list(validator.iter_errors({"version": "2.1.0", "runs": [{"results": []}]}))


def test_a_gated_check_is_valid_sarif_with_baseline_states(
    validator: jsonschema.protocols.Validator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(REPO / "example_workspace", ws, ignore=shutil.ignore_patterns("__pycache__"))
    base = ws / "baseline.json"
    args = ["check", str(ws / "models"), "--root", str(ws), "--checks", "static"]
    assert main([*args, "--write-baseline", str(base)]) == 0
    capsys.readouterr()
    losses = ws / "models" / "losses.py"
    src = losses.read_text()
    anchor = "    uniform = -logp.mean(dim=-1)\n"
    i = src.index(anchor) + len(anchor)
    losses.write_text(src[:i] + "    peak = nll.max().item()\n" + src[i:])
    # Static hints are information: new or not, they do not fail the check.
    assert main([*args, "--baseline", str(base), "--format", "sarif"]) == 0
    doc = json.loads(capsys.readouterr().out)
    states = {r.get("baselineState") for r in doc["runs"][0]["results"]}
    assert states == {"new", "unchanged"}
    _valid(validator, doc)


@pytest.mark.parametrize(
    "log", sorted((GOLDEN / "traces").glob("torch-*/*.log.gz")), ids=lambda p: p.parent.name
)
def test_every_recorded_trace_reads_as_valid_sarif(
    validator: jsonschema.protocols.Validator, log: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(GOLDEN / "traces" / "src", ws)
    run = trace_results([log], ws, [("/tmp/dynamo-lens-golden/ws", str(ws))], "trace")
    fingerprint.assign([f for r in run.results for f in r.all_findings()], ws)
    doc = sarif.document(run.results, ws)
    assert doc["runs"][0]["results"]
    _valid(validator, doc)


def test_fixes_errors_and_library_frames_are_valid_sarif(
    validator: jsonschema.protocols.Validator,
) -> None:
    lib = Frame("/usr/lib/python3/dist-packages/lib.py", 10, "helper", "x.item()")
    brk = Finding(
        Kind.GRAPH_BREAK,
        Severity.WARNING,
        "/w/m.py",
        3,
        5,
        3,
        9,
        "Graph break: x",
        gb_id="GB0170",
        stack=[lib],
    )
    brk.data["fixes"] = [
        {
            "rule": "item-to-tensor",
            "title": "keep it a tensor",
            "path": "/w/m.py",
            "start": 3,
            "end": 3,
            "text": "    y = x\n",
            "verified": True,
            "checks": [{"name": "breaks gone", "ok": True}],
            "claim": "equivalent",
        }
    ]
    err = Finding(Kind.ERROR, Severity.ERROR, "/w/bad.py", 1, 0, 1, 0, "SyntaxError: nope")
    outside = Finding(
        Kind.GRAPH_BREAK, Severity.INFORMATION, lib.path, 10, 1, 10, 2, "Graph break in a library"
    )
    res = FileResult(
        "/w/m.py",
        "h",
        reports=[TargetReport("t", "/w/m.py", 1, "example", findings=[brk, outside])],
        findings=[err],
    )
    fingerprint.assign([brk, err, outside], Path("/w"))
    doc = sarif.document([res], Path("/w"))
    assert any("fixes" in r for r in doc["runs"][0]["results"])
    _valid(validator, doc)
