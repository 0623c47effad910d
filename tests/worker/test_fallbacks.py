"""Where compiled code silently runs eagerly or recompiles, and where compile time goes: one CPU
fixture per cause (tests/fixtures/fallbacks), read from a real run's trace and found by
`check`, on every supported torch (this file is in the compat tier: scripts/compat.sh).

Each fixture marks the line a finding belongs on with ``# here: <cause>``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, check_json, markers, run_cli
from dynamo_lens.findings import Finding, Kind, Severity
from dynamo_lens.runs.command import trace_results
from dynamo_lens.runs.extract import RunReader
from dynamo_lens.runs.paths import PathMap
from dynamo_lens.runs.tracelog import read
from dynamo_lens.texts.locate import Workspace
from support.tracerun import record_trace

FALLBACKS = FIXTURES / "fallbacks"


def here(script: str, cause: str) -> int:
    (line,) = markers(FALLBACKS / script, f"# here: {cause}")
    return line


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixtures copied into a workspace of their own (traces are recorded beside it)."""
    root = tmp_path_factory.mktemp("fallbacks") / "ws"
    shutil.copytree(FALLBACKS, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture(scope="module")
def traces(ws: Path) -> dict[str, Path]:
    out = {}
    for script in ("causes", "clean", "seven_frames", "library_recompiles"):
        out[script] = record_trace(ws, f"{script}.py", ws.parent / f"trace-{script}")
    return out


def reader(ws: Path, trace: Path) -> RunReader:
    r = RunReader(Workspace(ws), PathMap(Workspace(ws)), "test")
    r.feed(read([trace]))
    return r


def at(findings: list[Finding], line: int, kind: Kind) -> Finding:
    found = [f for f in findings if f.line == line and f.kind == kind]
    assert len(found) == 1, [(f.line, f.kind.value, f.message) for f in findings]
    return found[0]


def test_a_skipped_frame_and_a_disabled_call_are_fallbacks_on_their_lines(
    ws: Path, traces: dict[str, Path]
) -> None:
    found = reader(ws, traces["causes"]).findings()
    skipped = at(found, here("causes.py", "skipped"), Kind.FALLBACK)
    assert skipped.severity == Severity.WARNING and skipped.data["fallback"] == "skipped"
    assert skipped.message.startswith("Falls back to eager: torch skipped skipped()")
    assert skipped.gb_id == "GB0170"
    disabled = at(found, here("causes.py", "disabled"), Kind.FALLBACK)
    assert disabled.severity == Severity.INFORMATION and disabled.data["fallback"] == "disabled"
    assert "eager_helper() is torch.compiler.disable'd" in disabled.message


def test_a_repeating_int_is_a_risk_and_a_one_off_none_is_information(
    ws: Path, traces: dict[str, Path]
) -> None:
    found = reader(ws, traces["causes"]).findings()
    repeats = at(found, here("causes.py", "repeating int"), Kind.RECOMPILE)
    assert repeats.severity == Severity.WARNING and repeats.data["recompiles"] == 3
    one_off = [f for f in found if f.kind == Kind.RECOMPILE and f.data.get("guard_kind") == "none"]
    assert [f.severity for f in one_off] == [Severity.INFORMATION], one_off
    # torch 2.8 names no line for this guard: the function's, where the mask is its parameter.
    assert one_off[0].line in (
        here("causes.py", "one-off None"),
        here("causes.py", "one-off None") - 1,
    )


def test_the_expensive_loop_ranks_first_and_functions_add_up_to_torchs_total(
    ws: Path, traces: dict[str, Path]
) -> None:
    run = trace_results([traces["causes"]], ws, [], "test")
    functions = run.functions()
    names = [f.target.rsplit("::", 1)[-1].split("@")[0] for f in functions]
    assert names[0] == "expensive", names
    assert functions[0].line == here("causes.py", "expensive loop") - 1  # its def line
    total = sum(float(f.environment["dynamo_seconds"]) for f in functions)  # type: ignore[arg-type]
    assert abs(total - run.dynamo_seconds) <= 0.1 * run.dynamo_seconds, (total, run.dynamo_seconds)


def test_a_clean_fixture_gives_no_finding(ws: Path, traces: dict[str, Path]) -> None:
    r = reader(ws, traces["clean"])
    assert r.findings() == []
    (report,) = r.reports()
    assert (report.graph_count, report.break_count, report.recompile_count) == (1, 0, 0)


def test_each_break_is_credited_to_the_frame_the_trace_names(
    ws: Path, traces: dict[str, Path]
) -> None:
    """One helper breaks inside seven compiled functions: a break each, never seven on one."""
    r = reader(ws, traces["seven_frames"])
    breaks = {rep.target.rsplit("::", 1)[-1].split("@")[0]: rep.break_count for rep in r.reports()}
    assert {f"f{i}": 1 for i in range(1, 8)}.items() <= breaks.items(), breaks
    (finding,) = r.findings()
    assert finding.line == here("seven_frames.py", "shared break")


def test_a_library_function_compiled_on_its_own_reports_on_the_users_line(
    ws: Path, traces: dict[str, Path]
) -> None:
    r = reader(ws, traces["library_recompiles"])
    line = here("library_recompiles.py", "library recompiles")
    risk = [f for f in r.findings() if f.kind == Kind.RECOMPILE and f.line == line]
    assert any(
        f.severity == Severity.WARNING and f.data.get("library", "").startswith("steplib/")
        for f in risk
    ), [(f.line, f.message) for f in r.findings()]
    (lib,) = [rep for rep in r.reports() if rep.environment.get("library")]
    assert (lib.path, lib.line) == (str(ws / "library_recompiles.py"), line)
    assert lib.recompile_count == 3 and lib.graph_count >= 4


def test_a_trace_read_from_a_folder_without_its_sources_keeps_every_finding(
    ws: Path, traces: dict[str, Path], tmp_path: Path
) -> None:
    """Nothing is lost to the workspace boundary: findings at their recorded paths, counted,
    and the way to map them said."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = trace_results([traces["causes"]], elsewhere, [], "test")
    assert run.outside > 0
    paths = {f.path for r in run.results for f in r.findings}
    assert paths == {str(ws / "causes.py")}
    rc, out, err = run_cli("trace", str(traces["causes"]), cwd=elsewhere)
    assert rc == 1, (out, err)
    assert "name no file under" in err and "--path-map" in err
    assert not out.strip().endswith(" 0 finding(s)"), out


def test_run_names_the_torch_it_ran_on(ws: Path) -> None:
    import torch

    rc, out, err = run_cli("run", "--format", "json", "--", sys.executable, "clean.py", cwd=ws)
    assert rc == 0, err
    doc = json.loads(out[out.index("{") :])
    assert doc["environment"]["torch"] == torch.__version__


def test_check_finds_each_cause_and_measures_whether_a_recompile_repeats(ws: Path) -> None:
    _, doc, _ = check_json("causes.py", "--checks", "breaks,recompiles", cwd=ws)
    found = {(f["line"], f["kind"]): f for f in doc["findings"]}
    skipped = found[(here("causes.py", "skipped"), "fallback")]
    assert skipped["severity"] == "warning" and skipped["data"]["fallback"] == "skipped"
    disabled = found[(here("causes.py", "disabled"), "fallback")]
    assert disabled["severity"] == "information"
    repeats = found[(here("causes.py", "repeating int"), "recompile")]
    # The example recompiles once; one more call with a fresh n compiles again.
    assert repeats["severity"] == "warning" and "measured" in repeats["message"], repeats
    one_off = found[(here("causes.py", "one-off None"), "recompile")]
    assert one_off["severity"] == "information"
    assert "a fresh value did not recompile" in one_off["message"], one_off
    # Every finding is one of the causes: nothing else, nothing twice.
    assert len(doc["findings"]) == 4, [(f["line"], f["message"]) for f in doc["findings"]]


def test_an_autocast_cache_bypass_is_reported_where_torch_bypasses(
    ws: Path, tmp_path: Path
) -> None:
    """pytorch#191106: AOTAutograd's cache does not take autocast on some torch releases (2.13
    here); where torch records a bypass, the function says it compiles cold every time. Where
    torch caches it (2.8, 2.15), no bypass is claimed and the cache's misses and hits are in
    the function's report."""
    trace = record_trace(ws, "autocast_cache.py", tmp_path / "trace")
    bypassed = any(
        '"name": "aotautograd_cache_bypass"' in p.read_text()
        or "fx_graph_cache_bypass" in p.read_text()
        for p in trace.iterdir()
    )
    r = reader(ws, trace)
    fallbacks = [f for f in r.findings() if f.kind == Kind.FALLBACK]
    (report,) = r.reports()
    if bypassed:
        (f,) = fallbacks
        assert f.data["fallback"] == "cache-bypass" and f.line == here(
            "autocast_cache.py", "cache bypass"
        )
        assert "autocast" in f.message and "autocast" in f.hints[0]
    else:
        assert fallbacks == []
        assert report.environment.get("cache"), report.environment


def test_the_fixtures_run_clean_as_scripts(ws: Path) -> None:
    """The fixtures are real code: each runs to the end on this torch."""
    for script in ("causes.py", "clean.py", "seven_frames.py", "library_recompiles.py"):
        subprocess.run([sys.executable, script], cwd=ws, check=True, capture_output=True)
