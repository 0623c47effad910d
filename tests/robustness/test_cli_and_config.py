"""Daemon robustness: CLI output paths, configured targets and what ``fix`` is asked to fix
are checked up front."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli
from dynamo_lens.config import load
from support.fix_workspace import eager_workspace


def test_check_to_a_folder_fails_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    rc, _, err = run_cli("check", str(tmp_path / "m.py"), "-o", str(tmp_path), cwd=tmp_path)
    assert rc == 2
    assert "cannot write the report" in err and "folder" in err
    assert "Traceback" not in err


def test_check_to_a_missing_folder_fails_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    rc, _, err = run_cli("check", str(tmp_path / "m.py"), "-o", str(tmp_path / "no/r.json"))
    assert rc == 2 and "no such folder" in err


def test_targets_outside_the_workspace_are_reported(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("")
    (tmp_path / "outside.py").write_text("")
    _, problems = load(ws, {"targets": ["../outside.py:f", "a.py:g", "gone.py:h", "nocolon"]})
    assert any("'../outside.py:f' is outside the workspace" in p for p in problems)
    assert any("gone.py:h" in p and "no such file" in p for p in problems)
    assert any("'nocolon'" in p for p in problems)
    assert not any("a.py:g" in p for p in problems)


# A break (an explicit one) and a recompile (the batch's rows vary over the example's calls) in
# one target: ``fix --checks`` picks which of the two it analyses and offers rewrites for.
BREAK_AND_RECOMPILE = """\
import torch


def head(x):
    y = torch.relu(x)
    torch._dynamo.graph_break()
    return y * 2


def compile_example():
    torch.manual_seed(0)
    return [(head, (torch.randn(n, 4),)) for n in (2, 3, 5)]
"""


def test_fix_checks_picks_breaks_or_recompiles_and_refuses_what_it_cannot_fix(
    tmp_path: Path,
) -> None:
    eager_workspace(tmp_path, m=BREAK_AND_RECOMPILE)
    kinds = {}
    for only in ("breaks", "recompiles"):
        rc, out, err = run_cli("fix", "m.py", "--checks", only, "--format", "json", cwd=tmp_path)
        assert rc == 0, err
        fixes = json.loads(out)["fixes"]
        assert fixes, (only, out)
        kinds[only] = {bool(f["gb_id"]) for f in fixes}  # a recompile has no break id
    assert kinds == {"breaks": {True}, "recompiles": {False}}, kinds
    rc, _, err = run_cli("fix", "m.py", "--checks", "timings", cwd=tmp_path)
    assert rc == 2 and "fix has rewrites for breaks and recompiles, not timings" in err, err
    assert (tmp_path / "m.py").read_text() == BREAK_AND_RECOMPILE


def test_fix_without_checks_runs_those_of_the_workspace_it_has_rewrites_for(
    tmp_path: Path,
) -> None:
    """A workspace that leaves the recompile check out (its probes are slow on its models) is
    not made to run it by ``fix``; one whose checks ``fix`` has no rewrites for is told so."""
    eager_workspace(tmp_path, m=BREAK_AND_RECOMPILE)
    config = tmp_path / "pyproject.toml"
    config.write_text(config.read_text() + 'checks = ["breaks", "timings"]\n')
    rc, out, err = run_cli("fix", "m.py", "--format", "json", cwd=tmp_path)
    assert rc == 0, err
    fixes = json.loads(out)["fixes"]
    assert fixes and all(f["gb_id"] for f in fixes), out  # breaks only: no recompile's fix
    config.write_text(config.read_text().replace('"breaks", "timings"', '"timings"'))
    rc, _, err = run_cli("fix", "m.py", cwd=tmp_path)
    assert rc == 2, err
    assert "the workspace's checks (timings) include none that fix has rewrites for" in err, err
    assert (tmp_path / "m.py").read_text() == BREAK_AND_RECOMPILE
