"""Golden files in the unit tier (no torch): the check report of example_workspace rendered as
text, JSON and SARIF from its recorded results, and the report of a run read from torch's own
structured trace as recorded by each supported torch (tests/golden/traces/RECORDED.md).

``--update-golden`` rewrites them; tests/worker/test_golden_check.py keeps the recorded results
equal to what the engine finds now."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from dynamo_lens.findings import FileResult, from_wire
from dynamo_lens.report import fingerprint, jsonout, sarif, text
from dynamo_lens.runs.command import report_environment, summary_text, trace_results
from support.goldens import GOLDEN, check, dumps, normalise, normalise_text

RESULTS = GOLDEN / "check" / "example_workspace.results.json"
TRACES = GOLDEN / "traces"
RECORDED_WS = "/tmp/dynamo-lens-golden/ws"  # where record.py ran the scripts


def test_the_check_report_renders_as_reviewed(request: pytest.FixtureRequest) -> None:
    recorded = json.loads(RESULTS.read_text())
    results = from_wire(recorded["results"], list[FileResult])
    root = Path("/ws")
    # As the CLI reports them: fingerprinted (the recorded paths do not exist here, so each
    # is made from its message; tests/unit/test_fingerprints.py covers the source's part).
    fingerprint.assign([f for r in results for f in r.all_findings()], root)
    check(request, "check/example_workspace.txt", text.render(results, root, verbose=True))
    check(request, "check/example_workspace.json", jsonout.render(results, recorded["environment"]))
    check(request, "check/example_workspace.sarif", sarif.render(results, root))


def _recorded() -> list[Path]:
    return sorted(TRACES.glob("torch-*/*.log.gz"))


@pytest.mark.parametrize("log", _recorded(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_recorded_run_reads_as_reviewed(
    request: pytest.FixtureRequest, log: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(TRACES / "src", ws)
    run = trace_results([log], ws, [(RECORDED_WS, str(ws))], f"trace {log.name}")
    assert run.skipped == 0
    fingerprint.assign([f for r in run.results for f in r.all_findings()], ws)
    doc = jsonout.document(run.results, report_environment(run, 0))
    name = f"traces/{log.parent.name}/{log.name.removesuffix('.log.gz')}"
    check(request, f"{name}.json", dumps(normalise(doc, ws)))
    report = text.render(run.results, ws) + "\n" + summary_text(run, ws)
    check(request, f"{name}.txt", normalise_text(report, ws))


def test_every_supported_torch_has_recorded_traces() -> None:
    assert {p.parent.name for p in _recorded()} >= {"torch-2.8.0", "torch-2.13.0", "torch-2.15.0"}
