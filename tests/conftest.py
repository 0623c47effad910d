from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# pytester; and fixtures shared by test files (a file's own fixture of the same name takes
# precedence).
pytest_plugins = ("pytester", "support.fix_workspace")

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def scratch(prefix: str) -> Path:
    """A temporary folder removed when the test process exits (a module's workspace lives as
    long as its daemon, which the process outlives)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


# Daemons and engines started by tests keep their result caches in a throwaway folder, not in
# the user's ~/.cache (the cache lives outside workspaces; see server/cache.py).
os.environ["XDG_CACHE_HOME"] = str(scratch("dynamo-lens-test-cache-"))
EXPECT_RE = re.compile(r"#\s*expect:\s*(?P<kind>[\w-]+)(?:\s+(?P<detail>\S+))?")


def run_cli(*args: str, cwd: Path = REPO, timeout: float = 900) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "dynamo_lens", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc.returncode, proc.stdout, proc.stderr


def check_json(*args: str, cwd: Path = REPO) -> tuple[int, dict[str, Any], str]:
    rc, out, err = run_cli("check", "--format", "json", *args, cwd=cwd)
    assert rc in (0, 1), f"exit {rc}\nstdout:\n{out}\nstderr:\n{err}"
    return rc, json.loads(out), err


def markers(path: Path, pattern: str = "fault-line") -> list[int]:
    return [
        i
        for i, line in enumerate(path.read_bytes().split(b"\n"), start=1)
        if pattern.encode() in line
    ]


def expectations(root: Path) -> list[tuple[str, int, str, str | None]]:
    """(relative path, line, kind, detail) for every `# expect:` marker under root; in a
    notebook's cell, the path is ``NOTEBOOK#cellN`` and the line is the cell's."""
    out = []
    for p in sorted(root.rglob("*.py")):
        for i, line in enumerate(p.read_text().splitlines(), start=1):
            m = EXPECT_RE.search(line)
            if m:
                out.append((str(p.relative_to(root)), i, m["kind"], m["detail"]))
    for p in sorted(root.rglob("*.ipynb")):
        cells = json.loads(p.read_text())["cells"]
        for n, cell in enumerate(cells, start=1):
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            for i, line in enumerate(source.splitlines(), start=1):
                if m := EXPECT_RE.search(line):
                    out.append((f"{p.relative_to(root)}#cell{n}", i, m["kind"], m["detail"]))
    return out


def cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite the golden files under tests/golden instead of comparing (then review)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cuda_items = [item for item in items if "cuda" in item.keywords]
    # Asked only when a CUDA test was collected: `import torch` takes seconds.
    if not cuda_items or cuda_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device on this machine")
    for item in cuda_items:
        item.add_marker(skip)


UNIT = Path(__file__).resolve().parent / "unit"


@pytest.fixture(autouse=True)
def _unit_tests_import_no_torch(request: pytest.FixtureRequest) -> Iterator[None]:
    """The unit tier runs in seconds without torch: a unit test that imports it fails."""
    before = "torch" in sys.modules
    yield
    if UNIT in request.node.path.parents and not before and "torch" in sys.modules:
        pytest.fail(f"{request.node.nodeid} imported torch: it belongs in tests/worker")
