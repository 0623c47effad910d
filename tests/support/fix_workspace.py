"""A copy of tests/fixtures/fixes as a workspace (the ``ws`` fixture, a pytest plugin of
tests/conftest.py), with a library outside it, and the CLI's ``fix``/``check`` read as JSON:
what the fix tests share. A test file's own ``ws`` fixture takes precedence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, check_json, markers, run_cli

FIXES = FIXTURES / "fixes"
NOISY_LIB = """import logging

import torch

logger = logging.getLogger("noisy_lib")


def noisy(x: torch.Tensor) -> torch.Tensor:
    print("library says hi")  # breaks the graph, in a file outside the workspace
    return torch.tanh(x)


def chatty(x: torch.Tensor) -> torch.Tensor:
    logger.warning(
        "library logs %s", "hi"
    )  # breaks the graph, in a file outside the workspace
    return torch.tanh(x)


def quiet(x: torch.Tensor) -> torch.Tensor:
    logger.info("library logs %s", "hi")  # below the level: shows nothing, still breaks
    return torch.tanh(x)
"""


def here(ws: Path, script: str, what: str) -> int:
    (line,) = markers(ws / script, f"# here: {what}")
    return line


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(FIXES, root, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "noisy_lib.py").write_text(NOISY_LIB)
    return root


def fix_json(ws: Path, *args: str) -> dict[str, object]:
    rc, out, err = run_cli("fix", *args, "--format", "json", cwd=ws)
    assert rc == 0, err
    doc: dict[str, object] = json.loads(out)
    return doc


def recompile_counts(ws: Path, script: str) -> dict[str, int]:
    """Per target, what torch recompiled over the example's calls (the check's own count)."""
    _, doc, _ = check_json(script, "--checks", "recompiles", cwd=ws)
    return {t["target"].rsplit("::", 1)[-1]: t["recompile_count"] for t in doc["targets"]}


def breaks_in(ws: Path, script: str) -> list[tuple[str, int]]:
    _, doc, _ = check_json(script, "--checks", "breaks", cwd=ws)
    return [
        (Path(f["path"]).name, f["line"]) for f in doc["findings"] if f["kind"] == "graph_break"
    ]


def eager_workspace(root: Path, **files: str) -> Path:
    """``root`` as a workspace that compiles with the eager backend on the CPU, holding
    ``files`` (name without ``.py`` -> source)."""
    (root / "pyproject.toml").write_text(
        '[tool.dynamo-lens]\nbackend = "eager"\ndevices = ["cpu"]\n'
    )
    for name, text in files.items():
        (root / f"{name}.py").write_text(text)
    return root
