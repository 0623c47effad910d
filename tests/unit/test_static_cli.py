"""`dynamo-lens check --checks static`: instant hints, no torch, no user code."""

from __future__ import annotations

import json
import subprocess
import sys

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
