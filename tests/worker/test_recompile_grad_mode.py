"""A recompile fix is verified in the grad mode the recompile check ran in: an ``eval()``
model's check runs without gradients, its compiled series with them, so the series does not
answer the check there (verify.py's ``merged``)."""

from __future__ import annotations

from pathlib import Path

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
    """An ``eval()`` model's recompile check runs without gradients, its compiled series with
    them: the series cannot answer the check there (hostile review). Marked dynamic, the size
    the code compares with 6 without gradients raises where the model runs: refused, as torch
    shows in a fresh process; the maybe-mark keeps the specialisation and is verified."""
    eager_workspace(tmp_path, no_grad_path=NO_GRAD_PATH)
    doc = fix_json(tmp_path, "no_grad_path.py")
    (fix,) = doc["fixes"]
    assert fix["rule"] == "maybe-mark-dynamic" and fix["verified"], fix
    (marked,) = [r for r in fix["refused"] if r["rule"] == "mark-dynamic"]
    assert marked["failed"] == ["calls still run"], marked
    assert "ConstraintViolationError" in marked["why"], marked
