"""A recompile fix is verified in the grad mode the target runs in, which its recompile check
ran in: an ``eval()`` model's compiled calls run without gradients (verify.py's ``cgrads``),
and the compiled series answers the check there too (``merged``)."""

from __future__ import annotations

from pathlib import Path

from conftest import check_json
from support.fix_workspace import eager_workspace, fix_json

NO_GRAD_PATH = """import torch
from torch import nn


class Special(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        if not torch.is_grad_enabled() and x.size(0) == 6:
            return y + 1
        return y


def compile_example():
    torch.manual_seed(0)
    model = Special().eval()
    return [(model, (torch.randn(n, 8),)) for n in (4, 6, 8)]
"""


def test_an_eval_model_is_checked_for_recompiles_without_gradients(tmp_path: Path) -> None:
    """An ``eval()`` model's recompile check runs without gradients (hostile review: a series
    run with them answered it once). Marked dynamic, the size the code compares with 6
    without gradients raises where the model runs: refused, as torch shows in a fresh
    process; the maybe-mark keeps the specialisation and is verified."""
    eager_workspace(tmp_path, no_grad_path=NO_GRAD_PATH)
    doc = fix_json(tmp_path, "no_grad_path.py")
    (fix,) = doc["fixes"]
    assert fix["rule"] == "maybe-mark-dynamic" and fix["verified"], fix
    (marked,) = [r for r in fix["refused"] if r["rule"] == "mark-dynamic"]
    assert marked["failed"] == ["calls still run"], marked
    assert "ConstraintViolationError" in marked["why"], marked


GRAD_PATH = NO_GRAD_PATH.replace("if not torch.is_grad_enabled()", "if torch.is_grad_enabled()")


def test_an_eval_models_fix_is_compiled_as_the_model_runs(tmp_path: Path) -> None:
    """The mirror: the size is compared with 6 only with gradients, which an ``eval()``
    model runs without. Its compiled calls run as it runs, so marked dynamic it raises
    nowhere (a series with gradients refused it: "calls still run"): every check passes, but
    for "no slower" where the machine's noise decides (test_fixes.py's ``_but_for_timing``)."""
    eager_workspace(tmp_path, grad_path=GRAD_PATH)
    _, before, _ = check_json("grad_path.py", "--checks", "recompiles", cwd=tmp_path)
    assert [t["recompile_count"] for t in before["targets"]] == [1], before["targets"]
    doc = fix_json(tmp_path, "grad_path.py")
    (fix,) = doc["fixes"]  # type: ignore[misc]
    tried = [(r["rule"], r["failed"]) for r in fix["refused"]]
    if fix["rule"] == "mark-dynamic":
        assert fix["verified"] and not tried, fix
        checks = {c["name"]: c["ok"] for c in fix["checks"]}
        assert checks["compiled equal"] and checks["no new break"], checks
        assert checks["fewer compiles"] and checks["no slower"], checks
    else:
        assert tried[0] == ("mark-dynamic", ["no slower"]), fix
