"""The regression gate over torch's own findings: a baseline of the example workspace's breaks
and recompiles, lines moved (nothing new, exit 0), one break added (exactly one new finding,
exit 1, at its line), ``diff`` of two reports and of two trace folders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, run_cli
from support.tracerun import BREAK_SCRIPT, record_trace

CHECK = ("--checks", "breaks,recompiles", "--backend", "eager", "--format", "json")
COMMON = "models/common.py"
# A second data-dependent branch in the helper cnn.py's target runs.
NEW_AFTER = "        x = x - x.mean(dim=(2, 3), keepdim=True)\n"
NEW_BREAK = "    if x.amax() > 1e6:\n        x = x / 2\n"


def _check(ws: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    rc, out, err = run_cli("check", str(ws / "models"), "--root", str(ws), *CHECK, *extra, cwd=ws)
    assert rc in (0, 1), err
    return rc, json.loads(out), err


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gate") / "ws"
    shutil.copytree(REPO / "example_workspace", out, ignore=shutil.ignore_patterns("__pycache__"))
    return out


def test_a_baseline_holds_across_moves_and_fails_on_exactly_the_new_break(ws: Path) -> None:
    base = ws / "baseline.json"
    rc, before, err = _check(ws, "--write-baseline", str(base))
    assert rc == 0 and "wrote the baseline" in err
    breaks = [f for f in before["findings"] if f["kind"] == "graph_break"]
    assert breaks and len(json.loads(base.read_text())["findings"]) == len(before["findings"])
    (ws / "before.json").write_text(json.dumps(before))

    for f in (ws / "models").glob("*.py"):
        f.write_text("# reorganised\n\n\n" + f.read_text())
    rc, moved, err = _check(ws, "--baseline", str(base))
    assert rc == 0, err
    assert {f["baseline"] for f in moved["findings"]} == {"known"}
    assert sorted(f["fingerprint"] for f in moved["findings"]) == sorted(
        f["fingerprint"] for f in before["findings"]
    )

    common = ws / COMMON
    src = common.read_text()
    common.write_text(src.replace(NEW_AFTER, NEW_AFTER + NEW_BREAK))
    rc, added, err = _check(ws, "--baseline", str(base))
    assert rc == 1, err
    new = [f for f in added["findings"] if f["baseline"] == "new"]
    line = common.read_text().splitlines().index(NEW_BREAK.splitlines()[0]) + 1
    assert [(Path(f["path"]).name, f["line"], f["kind"]) for f in new] == [
        ("common.py", line, "graph_break")
    ], new
    (ws / "after.json").write_text(json.dumps(added))

    rc, out, err = run_cli("diff", "before.json", "after.json", cwd=ws)
    assert rc == 1, err
    assert [ln for ln in out.splitlines() if ln.startswith("new: ")] == [
        f"new: {COMMON}:{line}: warning: graph_break: Graph break: data-dependent branching"
        " [GB0170]"
    ]
    assert out.splitlines()[-1] == f"1 new, 0 gone, {len(before['findings'])} unchanged"


def test_diff_of_trace_folders_and_of_trace_reports(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "train.py").write_text(BREAK_SCRIPT)
    # Two runs of the same code (as under two torches): the same findings.
    first = record_trace(ws, "train.py", tmp_path / "first")
    second = record_trace(ws, "train.py", tmp_path / "second")
    rc, out, err = run_cli("diff", str(first), str(second), cwd=ws)
    assert rc == 0, err
    assert out.splitlines()[-1] == "0 new, 0 gone, 1 unchanged", out
    # Reports made at each commit carry their fingerprints: a refactor that moves the break is
    # no change, and one that removes it leaves it gone.
    rc, out, err = run_cli("trace", str(first), "--format", "json", "-o", "a.json", cwd=ws)
    assert rc == 1, err
    (ws / "train.py").write_text("# refactored\n\n" + BREAK_SCRIPT)
    moved = record_trace(ws, "train.py", tmp_path / "moved")
    rc, out, err = run_cli("trace", str(moved), "--format", "json", "-o", "b.json", cwd=ws)
    rc, out, err = run_cli("diff", "a.json", "b.json", cwd=ws)
    assert rc == 0, err
    assert out.splitlines() == [
        "unchanged: train.py:8: warning: graph_break: Graph break: data-dependent branching"
        " [GB0170]",
        "0 new, 0 gone, 1 unchanged",
    ], out
    (ws / "train.py").write_text(BREAK_SCRIPT.replace("if y.sum() > 0:", "if True:"))
    fixed = record_trace(ws, "train.py", tmp_path / "fixed")
    rc, out, err = run_cli("diff", "b.json", str(fixed), "--format", "json", cwd=ws)
    assert rc == 0, err
    doc = json.loads(out)
    assert (len(doc["new"]), len(doc["gone"]), len(doc["unchanged"])) == (0, 1, 0), doc
