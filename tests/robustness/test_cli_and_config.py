"""Daemon robustness: CLI output paths and configured targets are checked up front."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli
from dynamo_lens.config import load


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
