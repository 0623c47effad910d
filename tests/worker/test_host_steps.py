"""Issue 31, fixes for real code: host code around torch's own modules runs in Python and each
call of the modules goes through a function torch compiles (``compile-step`` with its helper).
torch's own count after ``fix --apply`` says the breaks are gone, the fixed file computes what
the original did, and eagerly it compiles nothing."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, check_json
from support.fix_workspace import fix_json, here


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hoststeps") / "ws"
    shutil.copytree(FIXTURES / "hoststeps", root)
    return root


def _breaks(ws: Path, script: str) -> list[int]:
    _, doc, _ = check_json(script, "--checks", "breaks", cwd=ws)
    kinds = ("graph_break", "fallback")
    return sorted(f["line"] for f in doc["findings"] if f["kind"] in kinds)


def _run(ws: Path, code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ws, capture_output=True, text=True, check=True
    )
    return out.stdout


ORIGINAL = "import importlib.util as u, sys; s = u.spec_from_file_location('o', {!r}); "
ORIGINAL += "o = u.module_from_spec(s); s.loader.exec_module(o); "


def test_a_loop_runs_in_python_and_torchs_modules_run_compiled(ws: Path) -> None:
    script = "host_steps.py"
    table, drop = here(ws, script, "a Python table"), here(ws, script, "drops on the host")
    assert _breaks(ws, script) == sorted([table, drop])
    original = str(ws.parent / "original_host_steps.py")  # outside the workspace
    shutil.copy(ws / script, original)
    doc = fix_json(ws, script, "--apply")
    (fix,) = doc["applied"]  # type: ignore[misc]
    assert fix["rule"] == "compile-step" and fix["line"] == drop, fix
    checks = {c["name"]: (c["ok"], c["detail"]) for c in fix["checks"]}
    assert all(ok for ok, _ in checks.values()), checks
    # Outside a loop torch compiles up to the break: no boundary is moved there.
    left = [f for f in doc["fixes"] if f["line"] == table]  # type: ignore[attr-defined]
    assert all(f.get("rule") != "compile-step" for f in left), left
    text = (ws / script).read_text()
    assert text.count("def _compiled_step(") == 1
    assert "x = torch.relu(_compiled_step(layer)(x))" in text
    assert text.count("@torch.compiler.disable(recursive=False)") == 1
    now = here(ws, script, "a Python table")
    assert _breaks(ws, script) == [now]
    # Compiled, the fixed file computes what the original did eagerly (the drop's draws too);
    # torch compiled the layers' calls, one function for the three like layers; an eager
    # caller compiles nothing.
    code = ORIGINAL.format(original) + (
        "import torch, host_steps as f\n"
        "m0, a0 = o.compile_example_drop()\n"
        "torch.manual_seed(1); want = m0(*a0)\n"
        "m1, a1 = f.compile_example_drop()\n"
        "torch.manual_seed(1); got = torch.compile(m1, backend='eager')(*a1)\n"
        "ms = torch._dynamo.utils.get_compilation_metrics()\n"
        "print(torch.equal(got, want), min(m.graph_op_count for m in ms) > 0,\n"
        "      sorted({m.co_name for m in ms}))\n"
        "torch._dynamo.utils.clear_compilation_metrics()\n"
        "m, a = f.compile_example_drop(); m(*a)\n"
        "print('eager', len(torch._dynamo.utils.get_compilation_metrics()))\n"
    )
    compiled, eager = _run(ws, code).split("\n")[:2]
    assert compiled == "True True ['Linear_step_1']", compiled
    assert eager == "eager 0"
