"""The pre-commit manifest (.pre-commit-hooks.yaml) run by pre-commit itself: ``pre-commit
try-repo`` on this repository, in a project made for the test. The static hook gets its own
environment from the package registry (no torch in it); the full one runs ``dynamo-lens`` from
the interpreter on PATH, as a project's own would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

MODEL = """\
import torch


class Net(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        scale = y.max().item()
        return y / scale


def compile_example():
    return Net(), (torch.ones(3),)
"""


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("precommit") / "project"
    (root / "models").mkdir(parents=True)
    (root / "models" / "net.py").write_text(MODEL)
    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return root


def _try(project: Path, hook: str) -> tuple[int, str]:
    env = dict(os.environ)
    # pre-commit's cache (the static hook's environment) stays in the test's folder, and the
    # full hook finds this interpreter's dynamo-lens first.
    env["PRE_COMMIT_HOME"] = str(project.parent / "pre-commit-home")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), hook, "--all-files"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_the_static_hook_fails_on_a_likely_break_then_passes_once_it_is_baselined(
    project: Path,
) -> None:
    rc, out = _try(project, "dynamo-lens-static")
    assert rc == 1, out
    assert "models/net.py:7:" in out and "Tensor.item()" in out, out
    # Its environment has no torch (the package does not depend on it): the check ran without
    # it, as the unit tier shows in-process (tests/conftest.py fails a unit test importing it).

    base = project / "dynamo-lens-baseline.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "dynamo_lens",
            "check",
            "models",
            "--checks",
            "static",
            "--write-baseline",
            str(base),
        ],
        cwd=project,
        check=True,
        capture_output=True,
    )
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + '\n[tool.dynamo-lens]\nbaseline = "dynamo-lens-baseline.json"\n'
    )
    try:
        rc, out = _try(project, "dynamo-lens-static")
        assert rc == 0 and "Passed" in out, out
    finally:
        pyproject.write_text('[project]\nname = "p"\nversion = "0"\n')
        base.unlink()


def test_the_full_hook_reports_torchs_own_break(project: Path) -> None:
    rc, out = _try(project, "dynamo-lens")
    assert rc == 1, out
    assert "models/net.py:7:" in out and "Graph break" in out, out
