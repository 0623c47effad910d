"""The real-code defects, each with a positive and a negative case, against a warm worker.

Fixtures live in tests/fixtures/realcode: ``lib/site-packages/fakelib`` is a library outside the
workspace (``ws``); ``realcode_guess`` is a workspace that declares nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, run_cli
from dynamo_lens.config import load
from dynamo_lens.engine.analysis import Engine
from dynamo_lens.findings import Finding, Kind, Severity

WS = FIXTURES / "realcode" / "ws"
CHECKS = ["breaks", "recompiles"]


def _engine(root: Path, **settings: object) -> Engine:
    cfg, problems = load(root, {"backend": "eager", **settings})
    assert problems == []
    return Engine(root, cfg)


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    eng = _engine(WS)
    yield eng
    eng.close()


def _line(path: Path, text: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def _of(findings: list[Finding], kind: Kind) -> list[Finding]:
    return [f for f in findings if f.kind == kind]


# 1. Breaks and recompiles inside libraries are findings, on the user's calling line.


def test_a_break_inside_a_library_sits_on_the_users_call_and_names_the_library_line(
    engine: Engine,
) -> None:
    path = WS / "lib_user.py"
    res = engine.analyze_file(path, CHECKS, only_target="compile_example")
    (f,) = _of(
        res.all_findings(), Kind.GRAPH_BREAK
    )  # torch logs it once, then "duplicate": so do we
    assert f.line == _line(path, "return fakelib.noisy(x) + 1")
    assert f.message.endswith("in fakelib/__init__.py:7"), f.message
    assert f.data["library"] == "fakelib/__init__.py:7"
    chain = [(Path(fr.path).name, fr.line) for fr in f.stack]
    assert chain[-1] == ("__init__.py", 7) and ("lib_user.py", f.line) in chain
    assert all("_dynamo" not in fr.path and "dynamo_lens" not in fr.path for fr in f.stack)


def test_a_recompile_inside_a_library_is_kept_and_the_limit_goes_to_its_frame(
    tmp_path: Path,
) -> None:
    eng = _engine(WS, recompile_limit=2)
    try:
        path = WS / "lib_user.py"
        res = eng.analyze_file(path, CHECKS, only_target="compile_example_kinds")
    finally:
        eng.close()
    (f,) = _of(res.all_findings(), Kind.RECOMPILE)
    assert f.line == _line(path, "return fakelib.act(x, kind)")
    assert "in fakelib/__init__.py:12" in f.message
    assert f.data["variable"] == "kind" and f.data["limit_hit"] is True
    assert "mark_dynamic" not in f.data  # no quick fix can edit library code


def test_library_findings_can_be_hidden() -> None:
    eng = _engine(WS, library_findings=False)
    try:
        res = eng.analyze_file(WS / "lib_user.py", CHECKS)
    finally:
        eng.close()
    assert [f for f in res.all_findings() if f.kind in (Kind.GRAPH_BREAK, Kind.RECOMPILE)] == []
    assert len(res.reports) == 2  # analysed, just not shown


def test_a_break_in_user_code_names_no_library(engine: Engine) -> None:
    res = engine.analyze_file(WS / "pkg" / "layers" / "block.py", CHECKS)
    (f,) = _of(res.all_findings(), Kind.GRAPH_BREAK)
    assert f.gb_id == "GB0170" and "library" not in f.data and " in " not in f.message


# 2. Probes: a one-off per dim that automatic dynamic shapes absorb is never a warning.


def test_probing_a_clean_model_reports_nothing(engine: Engine) -> None:
    res = engine.analyze_file(WS / "probes.py", CHECKS, only_target="compile_example")
    assert res.reports and res.reports[0].recompile_count > 0  # torch did recompile, once per dim
    assert _of(res.all_findings(), Kind.RECOMPILE) == []


def test_probing_reports_what_recompiles_again_and_again(engine: Engine) -> None:
    path = WS / "probes.py"
    res = engine.analyze_file(path, CHECKS, only_target="compile_example_columns")
    (f,) = _of(res.all_findings(), Kind.RECOMPILE)
    assert f.severity == Severity.WARNING and f.data["source"] == "probes"
    # A tensor-size guard names no line: the finding marks the parameter in the signature.
    assert f.line == _line(path, "def per_column(x)")
    assert f.data["recompiles"] >= 2 and "dim 1" in f.message


# 3. Recompile checks run the target as it trains.


def test_training_mode_recompiles_are_seen(engine: Engine) -> None:
    path = WS / "training.py"
    res = engine.analyze_file(path, CHECKS, only_target="compile_example_train")
    (f,) = _of(res.all_findings(), Kind.RECOMPILE)
    assert f.line == _line(path, "self.steps += 1")
    assert f.data["recompiles"] == 3


def test_eval_mode_runs_without_grad(engine: Engine) -> None:
    res = engine.analyze_file(WS / "training.py", CHECKS, only_target="compile_example_eval")
    assert _of(res.all_findings(), Kind.RECOMPILE) == []


def _torchs_recompiles(example: str) -> int:
    """What torch's own recompile log counts for the example's calls, run as a user would."""
    out = subprocess.run(
        [sys.executable, str(WS / "counts.py"), example],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(out.stdout.split()[-1])


@pytest.mark.parametrize(
    ("example", "calls"), [("compile_example_vit", 3), ("compile_example_generate", 2)]
)
def test_recompile_counts_are_torchs_for_the_users_calls(
    engine: Engine, example: str, calls: int
) -> None:
    torch_count = _torchs_recompiles(example)
    res = engine.analyze_file(WS / "counts.py", CHECKS, only_target=example)
    (rep,) = res.reports  # model.generate twice is one target with two variants
    assert len(rep.variants) == calls  # the declared calls, never probes
    found = _of(res.all_findings(), Kind.RECOMPILE)
    assert rep.recompile_count == torch_count
    assert sum(f.data["recompiles"] for f in found) == torch_count, [f.message for f in found]


def test_the_fresh_call_that_measures_a_recompile_decides_severity_not_the_count(
    engine: Engine,
) -> None:
    path = WS / "counts.py"
    res = engine.analyze_file(path, CHECKS, only_target="compile_example_vit")
    (resize,) = [
        f for f in _of(res.all_findings(), Kind.RECOMPILE) if f.line == _line(path, "# resize")
    ]
    # Once in the example, and again for the measuring call: a risk, counted once.
    assert resize.severity == Severity.WARNING and "measured" in resize.message
    assert resize.data["recompiles"] == 1


# 4. Zero-config guessing.


def test_no_guesses_for_building_blocks_where_the_workspace_declares_targets(
    engine: Engine,
) -> None:
    res = engine.analyze_file(WS / "helpers.py", CHECKS)
    assert res.reports == [] and res.all_findings() == []
    assert not res.ran  # nothing of the file was imported: Tower(4096) was never built


def test_a_guess_that_cannot_build_inputs_is_silent() -> None:
    root = FIXTURES / "realcode_guess"
    logs: list[str] = []
    cfg, _ = load(root, {"backend": "eager"})
    eng = Engine(root, cfg, on_log=logs.append)
    try:
        res = eng.analyze_file(root / "unguessable.py", CHECKS)
    finally:
        eng.close()
    assert [r.target for r in res.reports] == ["unguessable.py::guess:Small"]
    assert [f for f in res.all_findings() if f.severity == Severity.ERROR] == []
    assert any("guess" in line and "Gate" in line for line in logs), logs
    assert all(f.note.startswith("zero-config guess") for f in res.all_findings())


# 5. Files inside packages import by their package path.


def test_a_package_file_imports_as_python_m_would(engine: Engine) -> None:
    res = engine.analyze_file(WS / "pkg" / "layers" / "block.py", CHECKS)
    assert [f for f in res.all_findings() if f.kind == Kind.ERROR] == []
    assert [r.target for r in res.reports] == ["pkg/layers/block.py::compile_example"]


# Real library code: transformers (installed by the dev setup; skipped where absent).

# A job's time limit for a real model's fix: one analysis of the GPT-2 generate() example
# (breaks, then the recompile check's probe families, each a few calls of generate()) takes
# about 100 s alone on a 2-core machine, and the default limit is 120 s. With the other test
# process and a profiler beside it, it ran past that (rc 1: the job was stopped). CI installs
# the compat venv meanwhile. What these tests check is the fix, not the speed. ``fix --apply``
# runs several jobs (analyses, verifications): the command's own limit is well above one's.
SLOW_REAL_CODE = '[tool.dynamo-lens]\nbackend = "eager"\ntimeout = 600\n'
SLOW_FIX_SECONDS = 2400


def _fix_apply(ws: Path, *args: str) -> dict[str, Any]:
    """``fix example.py --apply [args]`` in ``ws`` with the limits above: its JSON report."""
    (ws / "pyproject.toml").write_text(SLOW_REAL_CODE)
    rc, out, err = run_cli(
        "fix", "example.py", "--apply", "--format", "json", *args, cwd=ws, timeout=SLOW_FIX_SECONDS
    )
    assert rc == 0, f"{err}\n--- stdout ---\n{out[-3000:]}"
    doc: dict[str, Any] = json.loads(out)
    return doc


GPT2_EXAMPLE = """\
import torch
from transformers import GPT2Config, GPT2LMHeadModel


def compile_example():
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100, n_positions=64)
    model = GPT2LMHeadModel(cfg)
    ids = torch.randint(0, 100, (2, 16))
    return model, (ids,), {"labels": ids}
"""


def test_a_transformers_training_step_reports_torchs_library_break(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    (tmp_path / "example.py").write_text(GPT2_EXAMPLE)
    eng = _engine(tmp_path)
    try:
        res = eng.analyze_file(tmp_path / "example.py", ["breaks"])
    finally:
        eng.close()
    breaks = _of(res.all_findings(), Kind.GRAPH_BREAK)
    # torch logs one break (GB0291, `logger.warning_once` in modeling_utils.py) and then the
    # same one as a "duplicate": one finding, on the example's return line.
    assert [f.gb_id for f in breaks] == ["GB0291"]
    (f,) = breaks
    assert f.line == 10 and "in transformers/modeling_utils.py:" in f.message
    assert any("modeling_gpt2.py" in fr.path for fr in f.stack)


def test_the_transformers_logger_break_is_not_silenced_where_the_warning_shows(
    tmp_path: Path,
) -> None:
    """Issue 34 (it was issue 18's verified fix): the break inside transformers
    (``logger.warning_once``) has a setting in the user's file that makes torch drop the call.
    The compiled original still logs the warning, so dropping it changes what the user sees:
    not verified, nothing written, and the reason names the lost record. Transformers' files
    are left as they were."""
    pytest.importorskip("transformers")
    (tmp_path / "example.py").write_text(GPT2_EXAMPLE)
    doc = _fix_apply(tmp_path)
    assert doc["applied"] == [], doc
    (fix,) = doc["fixes"]
    assert fix["rule"] == "ignore-logger" and not fix["verified"], fix
    assert "compiled equal failed" in fix["why"] and "log records" in fix["why"], fix["why"]
    assert (tmp_path / "example.py").read_text() == GPT2_EXAMPLE


GENERATE_EXAMPLE = '''\
import torch
import transformers


class Generate(torch.nn.Module):
    """Greedy decoding as a serving script would compile it."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model.generate(ids, max_new_tokens=3, do_sample=False, pad_token_id=0)


def compile_example():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        n_layer=1, n_head=2, n_embd=32, vocab_size=100, n_positions=64, bos_token_id=1,
        eos_token_id=2,
    )
    model = transformers.GPT2LMHeadModel(cfg).eval()
    return Generate(model), (torch.randint(3, 100, (1, 5)),)
'''

# Torch alone, in a process of its own: each version's module compiled as the example says, its
# breaks counted, and its outputs on the example's prompt and on prompts it never used.
TRUTH = """
import importlib.util, json, sys
import torch
from torch._dynamo.utils import counters

out = {}
for name in sys.argv[1:]:
    spec = importlib.util.spec_from_file_location(name.replace(".", "_"), name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch._dynamo.reset()
    counters.clear()
    module, args = mod.compile_example()
    eager = [module(*args)]
    compiled = torch.compile(module, backend="eager")
    outs = [compiled(*args)]
    torch.manual_seed(1)
    # Other lengths, and a left-padded batch (pad id 0): generate() builds the attention mask
    # and positions only where the forward it calls says it takes them.
    padded = torch.tensor([[0, 0, 7, 8, 9], [5, 0, 7, 8, 9]])
    for prompt in (torch.randint(3, 100, (1, 4)), torch.randint(3, 100, (1, 9)), padded):
        eager.append(module(prompt))
        outs.append(compiled(prompt))
    assert "forward" not in vars(module.model)  # the caller's model, as it was
    out[name] = {
        "breaks": sum(counters["graph_break"].values()),
        "reasons": sorted(counters["graph_break"]),
        "outs": [o.tolist() for o in outs],
        "eager": [o.tolist() for o in eager],
    }
print(json.dumps(out))
"""


def test_breaks_inside_generate_are_removed_by_compiling_the_model_it_holds(
    tmp_path: Path,
) -> None:
    """Issue 31, part 2: five breaks torch reports inside transformers' ``generate()`` (host
    control flow around the model). The module runs generate() in Python and the model it holds
    is compiled while it runs, with the workspace's backend: one break left, where the boundary
    now is, and the same tokens on the example's prompt and on prompts of other lengths. The
    model is as it was for any other caller."""
    pytest.importorskip("transformers")
    (tmp_path / "example.py").write_text(GENERATE_EXAMPLE)
    (tmp_path / "original.py").write_text(GENERATE_EXAMPLE)
    # Breaks only: the recompile check's probes would run generate() ten more times per
    # analysis (two thirds of one here), for no assertion below. The GPT-2 logger test above
    # runs both checks on real code.
    doc = _fix_apply(tmp_path, "--checks", "breaks")
    (applied,) = doc["applied"]
    assert applied["rule"] == "compile-model" and applied["verified"], applied
    step = next(c for c in applied["checks"] if c["name"] == "no recompile per step")
    assert step["ok"] and "one token longer compiled no frame more than 1" in step["detail"]
    text = (tmp_path / "example.py").read_text()
    assert text.count("class _CompiledSteps:") == 1
    assert (
        "    @torch.compiler.disable\n    def forward(self, ids):\n"
        "        with _CompiledSteps(self.model, backend='eager'):\n"
        "            return self.model.generate(" in text
    )
    # What is left is the boundary itself: torch skipping the method the rewrite disabled.
    assert [f["gb_type"] for f in doc["fixes"] if f["gb_id"]] == [
        "Skip inlining `torch.compiler.disable()`d function"
    ], doc["fixes"]
    truth = subprocess.run(
        [sys.executable, "-c", TRUTH, "original.py", "example.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    before, after = json.loads(truth.stdout.splitlines()[-1]).values()
    # Distinct reasons (two of the five sites share one): a prompt of another length compiles
    # the outer frame again, and torch counts its one break again there.
    (left,) = after["reasons"]
    assert len(before["reasons"]) >= 4 and "torch.compiler.disable" in left, before["reasons"]
    assert after["outs"] == before["eager"] == after["eager"] == before["outs"]
