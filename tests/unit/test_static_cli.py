"""`dynamo-lens check --checks static`: instant hints, no torch, no user code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES, REPO

# torch made unimportable: the static check must not need it.
NO_TORCH = (
    "import sys; sys.modules['torch'] = None; "
    "from dynamo_lens.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _run(*args: str) -> tuple[int, str, str]:
    p = subprocess.run(
        [sys.executable, "-c", NO_TORCH, *args], capture_output=True, text=True, timeout=120
    )
    return p.returncode, p.stdout, p.stderr


def test_static_check_runs_without_torch_and_finds_likely_breaks() -> None:
    rc, out, err = _run(
        "check", str(REPO / "example_workspace"), "--checks", "static", "--format", "json"
    )
    assert rc in (0, 1), err
    doc = json.loads(out)
    hints = [f for f in doc["findings"] if f["kind"] == "static_hint"]
    assert hints, doc
    assert all(f["severity"] in ("hint", "information") for f in hints)
    lines = {(f["path"].rsplit("/", 1)[-1], f["line"]) for f in hints}
    assert ("losses.py", 33) in lines  # `.item()`
    assert doc["targets"] == []  # nothing was run


def test_static_check_never_runs_user_code() -> None:
    # exits.py would end any process that imported it
    rc, out, err = _run("check", str(FIXTURES / "faults" / "exits.py"), "--checks", "static")
    assert rc == 0, err
    assert out.strip().endswith("finding(s)")


def test_a_file_that_is_not_python_is_a_usage_error_never_a_clean_check(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    notebook = tmp_path / "model.ipynb"
    notebook.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    notes = tmp_path / "notes.txt"
    notes.write_text("x = 1\n")
    rc, out, err = _run("fix", str(notebook))
    assert rc == 2 and out == "", out
    assert "fixes are not offered for notebooks yet" in err and str(notebook) in err
    rc, out, err = _run("check", "--checks", "static", str(notebook))  # a notebook is checked
    assert rc == 0 and out.strip().startswith("1 file(s)"), (out, err)
    rc, out, err = _run("check", str(notes), "--checks", "static")
    assert rc == 2 and f"not a Python file or notebook (.py or .ipynb): {notes}" in err
    assert out == ""


def test_notebooks_in_a_folder_are_checked_and_a_broken_one_is_named(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "a.ipynb").write_text("{}")
    (tmp_path / "m.py").write_text("x = 1\n")
    rc, out, _ = _run("check", str(tmp_path), "--checks", "static")
    assert rc == 1 and out.strip().endswith("2 file(s), 0 target(s), 1 finding(s)"), out
    assert "a.ipynb:1:1: error:" in out and "not a valid notebook (nbformat)" in out, out


def test_a_python_script_without_an_extension_is_checked(tmp_path: Path) -> None:
    # pre-commit's `types: [python]` passes such a script by name (its shebang says Python).
    (tmp_path / "pyproject.toml").write_text("")
    script = tmp_path / "runme"
    script.write_text("#!/usr/bin/env python3\nx = 1\n")
    rc, out, err = _run("check", "--checks", "static", str(script))
    assert rc == 0 and out.strip().startswith("1 file(s)"), (out, err)
