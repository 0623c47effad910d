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


SALIENCY = GRAD_PATH.replace("torch.randn(n, 8)", "torch.randn(n, 8, requires_grad=True)")


def test_an_eval_model_asked_for_its_inputs_gradient_runs_with_gradients(tmp_path: Path) -> None:
    """An ``eval()`` model whose inputs ask for their gradient (a saliency map) builds the
    autograd graph as a training model does: checked and compiled with gradients, where the
    size compared with 6 makes the mark raise (hostile review: it was verified and written,
    and raised in torch alone under grad mode)."""
    eager_workspace(tmp_path, saliency=SALIENCY)
    doc = fix_json(tmp_path, "saliency.py")
    (fix,) = doc["fixes"]  # type: ignore[misc]
    tried = [(fix["rule"], fix["verified"])] + [(r["rule"], False) for r in fix["refused"]]
    assert ("mark-dynamic", True) not in tried, fix
    (marked,) = [r for r in fix["refused"] if r["rule"] == "mark-dynamic"]
    assert marked["failed"] == ["calls still run"], marked
    assert "ConstraintViolationError" in marked["why"], marked


READS_MODE = """import torch
from torch import nn


class Served(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.register_buffer("served", torch.zeros(()))

    def forward(self, x):
        y = self.lin(x)
        if not torch.is_grad_enabled():
            self.served += x.size(0)
            return y
        return y + 1


def compile_example():
    torch.manual_seed(0)
    model = Served().eval()
    return [(model, (torch.randn(n, 8),)) for n in (4, 6, 8)]
"""


def test_an_eval_models_compiled_calls_are_compared_in_their_grad_mode(tmp_path: Path) -> None:
    """Compiled without gradients, as the model runs, its outputs and the buffer it counts
    rows in are compared with an eager run without gradients too (hostile review: compared
    with the eager run with gradients, every rewrite was refused on "compiled equal")."""
    eager_workspace(tmp_path, reads_mode=READS_MODE)
    doc = fix_json(tmp_path, "reads_mode.py")
    (fix,) = doc["fixes"]  # type: ignore[misc]
    tried = [(fix["rule"], [c["name"] for c in fix["checks"] if not c["ok"]])]
    tried += [(r["rule"], r["failed"]) for r in fix["refused"]]
    (failed,) = [f for rule, f in tried if rule == "mark-dynamic"]
    assert failed in ([], ["no slower"]), fix  # the machine's verdict: ``_but_for_timing``


# The same model in training, called by a plain function through a global name.
STEP = (
    GRAD_PATH.split("\n\ndef compile_example")[0]
    + """

torch.manual_seed(0)
model = Special().train()


def infer(x):
    return model(x).relu()


def compile_example():
    return [(infer, (torch.randn(n, 8),)) for n in (4, 6, 8)]
"""
)


def test_a_function_that_calls_a_training_model_runs_with_gradients(tmp_path: Path) -> None:
    """A plain function whose model is in training runs with gradients, as torch alone
    shows: the size compared with 6 there is a recompile of its own (two, not one), and its
    mark raises (hostile review: checked without gradients, the mark was written and raised)."""
    eager_workspace(tmp_path, step=STEP)
    _, before, _ = check_json("step.py", "--checks", "recompiles", cwd=tmp_path)
    assert [t["recompile_count"] for t in before["targets"]] == [2], before["targets"]
    doc = fix_json(tmp_path, "step.py")
    (fix,) = doc["fixes"]  # type: ignore[misc]
    assert not fix["verified"], fix
    (marked,) = [r for r in fix["refused"] if r["rule"] == "mark-dynamic"]
    assert marked["failed"] == ["calls still run"], marked
