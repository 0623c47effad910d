"""Moving the compile boundary (issue 31, part 2): a decode loop that stops on a tensor test
runs in Python and torch compiles each step instead. Verified only with no break left where
the target is compiled, equal outputs over the same calls, and no frame compiled again step
after step; torch's own count after ``fix --apply`` says the break is gone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import check_json
from support.fix_workspace import fix_json, here


def breaks_in(ws: Path, script: str) -> list[tuple[str, int]]:
    """Breaks and the frames torch then skipped (a break in a loop), as torch reports them."""
    _, doc, _ = check_json(script, "--checks", "breaks", cwd=ws)
    kinds = ("graph_break", "fallback")
    return [(Path(f["path"]).name, f["line"]) for f in doc["findings"] if f["kind"] in kinds]


def test_a_decode_loop_runs_in_python_and_its_step_is_compiled(ws: Path) -> None:
    script = "decode_loop.py"
    stop, ops = here(ws, script, "stops on a tensor"), here(ws, script, "only tensor ops")
    assert sorted(ln for _, ln in breaks_in(ws, script)) == sorted([stop, ops])
    doc = fix_json(ws, script, "--apply")
    # The step's own recompile over the two sizes may get its fix too (``dynamic-setting``).
    applied = {a["rule"]: a for a in doc["applied"]}  # type: ignore[union-attr]
    assert set(applied) <= {"compile-step", "dynamic-setting"}, applied
    fix = applied["compile-step"]
    # At the line the stop had when it was written (the setting may have gone in first).
    assert fix["line"] in (stop, stop + 3) and fix["verified"], fix
    checks = {c["name"]: (c["ok"], c["detail"]) for c in fix["checks"]}
    assert checks["break gone"][0] and checks["outputs equal"][0], checks
    ok, said = checks["no recompile per step"]
    assert ok and said.endswith("the same call again compiled 0 frame(s)"), checks
    # A loop of tensor ops only has no step to compile: no such rewrite, the file keeps it.
    left = [f for f in doc["fixes"] if f["line"] == ops]  # type: ignore[attr-defined]
    assert all(f.get("rule") != "compile-step" for f in left), left
    text = (ws / script).read_text()
    assert text.count("@torch.compiler.disable(recursive=False)") == 1
    # The loop of tensor ops still breaks, where its line moved to.
    assert [ln for _, ln in breaks_in(ws, script)] == [here(ws, script, "only tensor ops")]
    # The fixed file computes what it did, eagerly and compiled.
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import torch, decode_loop as d; m, (h,) = d.compile_example_decode()[0]; "
            "print(torch.equal(torch.compile(m, backend='eager')(h), m(h)))",
        ],
        cwd=ws,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "True"
