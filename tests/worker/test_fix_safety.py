"""``fix --apply`` never loses a byte and never changes what the code computes (issue 28): every
reproduction of the issue, with real torch and real workers."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, markers, run_cli
from dynamo_lens.config import load
from dynamo_lens.engine.analysis import Engine
from dynamo_lens.engine.fixing import apply_verified
from dynamo_lens.fixes.catalogue import Rewrite

FIXES = FIXTURES / "fixes"
BRANCH = "Data-dependent branching"


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    for name in ("pyproject.toml", "branchy.py", "other_paths.py"):
        shutil.copy(FIXES / name, root / name)
    return root


def here(path: Path, what: str) -> int:
    (line,) = markers(path, f"# here: {what}")
    return line


def _fix(ws: Path, *args: str, rc: int = 0) -> dict[str, Any]:
    code, out, err = run_cli("fix", *args, "--format", "json", cwd=ws)
    assert code == rc, (code, out, err)
    doc: dict[str, Any] = json.loads(out)
    return doc


def test_each_semantic_case_is_refused_or_verified_on_both_paths(ws: Path) -> None:
    src = ws / "other_paths.py"
    fixes = {f["line"]: f for f in _fix(ws, "other_paths.py")["fixes"]}
    # An arm with an in-place op, a print that counts, a loop over sqrt: no rewrite at all.
    for what in ("in-place", "counted print", "loop"):
        fix = fixes[here(src, what)]
        assert fix["rule"] is None and "no rewrite" in fix["why"], (what, fix)
    # sqrt under a branch: the double where, compared on inputs that take each path.
    sqrt = fixes[here(src, "sqrt")]
    assert sqrt["rule"] == "torch-where" and sqrt["verified"] and sqrt["applicable"], sqrt
    assert "covering both paths" in sqrt["claim"]
    assert "torch.sqrt(torch.where(cond, h, 1.0))" in sqrt["diff"]
    # An arm that changes the shape: the selection's arms differ, for every input size; one
    # that keeps a batch of one differs at other sizes; one whose dtype is the input's only
    # for float32 differs for float64.
    for what, check, detail in (
        ("shape", "arms match", "differ in shape"),
        ("batch one", "outputs equal", "batch doubled: output: shape [2, 8] vs eager [1, 8]"),
        ("dtype", "outputs equal", "as float64: output: dtype torch.float64"),
        ("python numbers", "arms match", "not a tensor"),
    ):
        fix = fixes[here(src, what)]
        failed = [c for c in fix["checks"] if not c["ok"]]
        assert not fix["verified"] and failed[0]["name"] == check, fix
        assert detail in failed[0]["detail"], failed
    # A dropout in an arm of a model in eval mode: in training it draws on the path where the
    # original does not.
    drop = fixes[here(src, "dropout")]
    assert not drop["verified"] and "same state failed" in drop["why"], drop
    assert "training mode" in drop["why"] and "random generator" in drop["why"]
    # A condition of one value only at a batch of one: at another the original refuses it,
    # and the selection must refuse it too.
    row = fixes[here(src, "row condition")]
    assert not row["verified"] and "returns where the original raises" in row["why"], row
    # What a caller can tell apart besides values: the input itself returned, an output that
    # asks for no gradient, a layer run twice that skips its projection both times.
    for what, said in (
        ("returns input", "is input 0 itself in the original"),
        ("detach", "asks for a gradient, the original's not"),
        ("twice", "asks for a gradient, the original's not"),
    ):
        fix = fixes[here(src, what)]
        assert not fix["verified"] and said in fix["why"], (what, fix["why"])
    # A print whose argument records into the module: not guarded.
    assert fixes[here(src, "remembers")]["rule"] is None


def _verdict(
    engine: Engine, ws: Path, target: str, rw: Rewrite, line: int, gb: str = BRANCH
) -> dict[str, Any]:
    out = engine.verify_rewrite(
        ws / "other_paths.py",
        f"other_paths.py::{target}",
        dataclasses.asdict(rw),
        (str(ws / "other_paths.py"), line, gb),
    )
    assert isinstance(out, dict), out
    return out


def _naive(rule: str, path: str, start: int, end: int, text: str, branch: int = 0) -> Rewrite:
    """A rewrite written by hand, as a rule without its refusals would write it."""
    return Rewrite(rule, "naive", path, start, end, text, exact=True, branch=branch)


def _failed(out: dict[str, Any]) -> dict[str, Any]:
    assert out["verified"] is False, out
    return next(c for c in out["checks"] if not c["ok"])


def test_naive_rewrites_equal_on_the_example_are_rejected_on_the_other_path(ws: Path) -> None:
    """What the rules refuse to write, written by hand: each is equal on the example's own
    inputs, and verification finds the input that tells it apart."""
    cfg, _ = load(ws, {"checks": ["breaks"]})
    with Engine(ws, cfg) as engine:  # one warm worker for all of them
        _naive_rewrites_are_rejected(engine, ws)


def _naive_rewrites_are_rejected(engine: Engine, ws: Path) -> None:
    path = str(ws / "other_paths.py")
    src = ws / "other_paths.py"
    line = here(src, "sqrt")
    naive_sqrt = _naive(
        "torch-where",
        path,
        line,
        line + 1,
        "        h = torch.where(h.min() > 0, torch.sqrt(h), h)\n",
        branch=line,
    )
    c = _failed(_verdict(engine, ws, "compile_example_sqrt", naive_sqrt, line))
    assert c["name"] == "outputs equal" and "grad" in c["detail"], c
    # An example that takes the branch: its own gradients are finite, the other path's not.
    c = _failed(_verdict(engine, ws, "compile_example_sqrt_positive", naive_sqrt, line))
    assert c["name"] == "outputs equal" and "grad" in c["detail"], c
    assert not c["detail"].startswith("example"), c  # found on an input of the other path
    line = here(src, "in-place")
    in_place = _naive(
        "torch-where",
        path,
        line,
        line + 1,
        "        h = torch.where(h.sum() > 1e6, h.clamp_(min=0), h)\n",
        branch=line,
    )
    c = _failed(_verdict(engine, ws, "compile_example_inplace", in_place, line))
    assert c["name"] == "outputs equal" and c["detail"].startswith("example"), c
    line = here(src, "counted print")
    guarded = _naive(
        "guard-output",
        path,
        line,
        line,
        "        if not torch.compiler.is_compiling():\n"
        '            print("call", self.calls.add_(1))\n',
    )
    c = _failed(
        _verdict(
            engine, ws, "compile_example_counted", guarded, line, "Failed to trace builtin operator"
        )
    )
    assert c["name"] == "compiled equal" and "state" in c["detail"] and "calls" in c["detail"], c
    line = here(src, "remembers")
    remembered = _naive(
        "guard-output",
        path,
        line,
        line,
        "        if not torch.compiler.is_compiling():\n"
        '            print("call number", self.remember(h))\n',
    )
    c = _failed(
        _verdict(
            engine,
            ws,
            "compile_example_remembers",
            remembered,
            line,
            "Failed to trace builtin operator",
        )
    )
    assert c["name"] == "compiled equal" and "history" in c["detail"], c
    line = here(src, "loop")
    loop = _naive(
        "loop-exit",
        path,
        line - 1,
        line + 2,
        "        exited = torch.zeros((), dtype=torch.bool)\n"
        "        for _ in range(20):\n"
        "            exited = torch.logical_or(exited, y.min() < 1.0)\n"
        "            y = torch.where(exited, y, torch.sqrt(y - 1.0) + 0.5)\n",
        branch=line,
    )
    out = _verdict(engine, ws, "compile_example_loop", loop, line)
    c = _failed(out)
    assert c["name"] == "outputs equal" and "grad" in c["detail"], out


_SAME = """
import importlib.util, sys, torch
def load(p, n):
    s = importlib.util.spec_from_file_location(n, p)
    m = importlib.util.module_from_spec(s); s.loader.exec_module(m); return m
a, b = load(sys.argv[1], "a"), load(sys.argv[2], "b")
ma, (x,) = a.compile_example_sqrt(); mb, _ = b.compile_example_sqrt()
paths = set()
for seed in range(40):
    g = torch.Generator().manual_seed(seed)
    sign = 1 if seed % 2 else -1
    sd = {k: torch.randn(v.shape, generator=g).abs() * sign for k, v in ma.state_dict().items()}
    ma.load_state_dict(sd); mb.load_state_dict(sd)
    xi = torch.randn(x.shape, generator=g).abs().requires_grad_()
    xj = xi.detach().clone().requires_grad_()
    oa, ob = ma(xi), mb(xj)
    oa.sum().backward(); ob.sum().backward()
    torch.testing.assert_close(ob, oa, rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(xj.grad, xi.grad, rtol=0, atol=0, equal_nan=True)
    for (n, pa), pb in zip(ma.named_parameters(), mb.parameters()):
        torch.testing.assert_close(pb.grad, pa.grad, rtol=0, atol=0, equal_nan=True)
        pa.grad = pb.grad = None
    paths.add(bool(ma.fc(xi).min() > 0))
assert paths == {True, False}, paths
print("same on both paths")
"""


def test_an_applied_fix_keeps_outputs_and_gradients_on_inputs_the_example_never_used(
    ws: Path,
) -> None:
    doc = _fix(ws, "other_paths.py", "--apply")
    assert [a["rule"] for a in doc["applied"]] == ["torch-where"]
    assert doc["applied"][0]["diff"].count("-        if h.min() > 0:") == 1  # the original's
    done = subprocess.run(
        [sys.executable, "-c", _SAME, str(FIXES / "other_paths.py"), str(ws / "other_paths.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "same on both paths" in done.stdout, done.stderr


def test_files_that_cannot_be_analysed_are_errors_never_clean(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.dynamo-lens]\nbackend = "eager"\n')
    (tmp_path / "bad.py").write_text("import torch\ndef f(:\n    pass\n")
    example = "\n\ndef compile_example():\n    return f, (torch.randn(2),)\n"
    (tmp_path / "exits.py").write_text(
        "import sys\nimport torch\nsys.exit(3)\n\ndef f(x):\n    return x" + example
    )
    (tmp_path / "hangs.py").write_text(
        "import threading\nimport torch\n\n\ndef f(x):\n    threading.Event().wait()\n"
        "    return x" + example
    )
    rc, out, err = run_cli("fix", ".", "--apply", "--timeout", "10", cwd=tmp_path)
    assert rc == 1, (rc, out, err)
    assert "no graph breaks" not in out
    assert "bad.py:2:" in out and "SyntaxError" in out
    assert "exits.py:3:1: error" in out and "SystemExit" in out
    assert "hangs.py:" in out and "timed out" in out


def test_a_concurrent_edit_survives_and_the_rewrite_lands_on_the_right_line(ws: Path) -> None:
    """The user adds a line at the top, then edits the print's own line, while the worker
    verifies: each time the rewrite is verified again on what the file now holds."""
    path = ws / "branchy.py"
    cfg, _ = load(ws, {"checks": ["breaks"]})
    edits = [
        lambda t: "# a line the user added\n" + t,
        lambda t: t.replace('logger.debug("forward ran")', 'logger.debug("forward ran!")'),
    ]
    with Engine(ws, cfg) as engine:
        verify = engine.verify_rewrite

        def typing_meanwhile(*args: Any, **kwargs: Any) -> Any:
            if edits:
                path.write_text(edits.pop(0)(path.read_text()))
            return verify(*args, **kwargs)

        engine.verify_rewrite = typing_meanwhile  # type: ignore[method-assign]
        done = apply_verified(engine, str(path))
    text = path.read_text()
    assert text.startswith("# a line the user added\n")
    assert "        h = self.fc(x)\n" in text  # not deleted by a rewrite of a stale line
    assert '            logger.debug("forward ran!")' in text  # the edit kept, and then guarded
    assert text.count("is_compiling()") == 1 and text.count("torch.where(") == 1
    assert [f.rewrite.rule for f in done.applied if f.rewrite] == ["torch-where", "guard-output"]
    assert not done.errors


def test_two_runs_at_once_do_not_interleave(ws: Path) -> None:
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "dynamo_lens", "fix", "branchy.py", "--apply"],
            cwd=ws,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in runs]
    assert [p.returncode for p in runs] == [0, 0], outs
    text = (ws / "branchy.py").read_text()
    assert text.count("is_compiling()") == 1 and text.count("torch.where(") == 1, text
    assert sum(err.count("dynamo-lens: wrote") for _, err in outs) == 2, outs


def test_crlf_a_link_out_and_a_read_only_file_in_one_folder(ws: Path, tmp_path: Path) -> None:
    crlf = (FIXES / "branchy.py").read_bytes().replace(b"\n", b"\r\n")
    (ws / "branchy.py").write_bytes(crlf)
    os.remove(ws / "other_paths.py")
    shutil.copy(FIXES / "branchy.py", ws / "zz_read_only.py")
    (ws / "zz_read_only.py").chmod(0o444)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(FIXES / "branchy.py", outside / "theirs.py")
    (ws / "link.py").symlink_to(outside / "theirs.py")
    doc = _fix(ws, ".", "--apply", rc=2)
    assert [(a["path"], a["rule"]) for a in doc["applied"]] == [
        ("branchy.py", "torch-where"),
        ("branchy.py", "guard-output"),
    ]
    out = (ws / "branchy.py").read_bytes()
    # Every line, old and new, ends in CRLF (one line fewer, one more: the same count).
    assert out.count(b"\n") == out.count(b"\r\n") == crlf.count(b"\r\n")
    assert b"if not torch.compiler.is_compiling():\r\n" in out
    assert any("read-only" in e for e in doc["errors"]), doc["errors"]
    assert any("outside the workspace" in e for e in doc["errors"]), doc["errors"]
    assert (ws / "zz_read_only.py").read_bytes() == (FIXES / "branchy.py").read_bytes()
    assert (outside / "theirs.py").read_bytes() == (FIXES / "branchy.py").read_bytes()
    assert (ws / "link.py").is_symlink()


def test_an_interrupted_run_names_every_file_it_changed(ws: Path) -> None:
    """SIGTERM once the first rewrite is written: the file is whole, and what changed is
    said (whenever the signal lands, every rewrite in the file was named as written)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "dynamo_lens", "fix", "branchy.py", "--apply"],
        cwd=ws,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    said = []
    for line in proc.stderr:
        said.append(line)
        if line.startswith("dynamo-lens: wrote"):
            proc.send_signal(signal.SIGTERM)
            break
    _, rest = proc.communicate(timeout=600)
    err = "".join(said) + rest
    text = (ws / "branchy.py").read_text()
    compile(text, "branchy.py", "exec")  # whole
    written = err.count("dynamo-lens: wrote branchy.py")
    assert written == text.count("torch.where(") + text.count("is_compiling()"), err
    if proc.returncode == 2:  # stopped before the end: it says so, and what it changed
        assert "interrupted; changed so far: branchy.py" in err, err


def test_a_file_that_keeps_changing_is_left_as_the_user_has_it_and_said(ws: Path) -> None:
    path = ws / "branchy.py"
    cfg, _ = load(ws, {"checks": ["breaks"]})
    with Engine(ws, cfg) as engine:
        verify = engine.verify_rewrite

        def typing_all_along(*args: Any, **kwargs: Any) -> Any:
            path.write_text(path.read_text() + "# typed\n")
            return verify(*args, **kwargs)

        engine.verify_rewrite = typing_all_along  # type: ignore[method-assign]
        done = apply_verified(engine, str(path))
    assert done.applied == [] and any("kept changing" in e for e in done.errors), done.errors
    text = path.read_text()
    assert text.startswith((FIXES / "branchy.py").read_text()) and text.count("# typed") >= 3
