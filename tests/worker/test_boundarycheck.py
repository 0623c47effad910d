"""What verification allows and asks of a rewrite that moves the compile boundary
(worker/boundarycheck.py): the one break torch reports for the function the rewrite disabled,
and the prompt one token longer that shows the steps do not compile again. From the hostile
review of ``compile-model``."""

from __future__ import annotations

import torch
from dynamo_lens.findings import Finding, Kind, Severity
from dynamo_lens.fixes.rewrite import Rewrite
from dynamo_lens.worker.boundarycheck import at_boundary, longer_prompt
from dynamo_lens.worker.usercode import Call

DISABLED = "Skip inlining `torch.compiler.disable()`d function"


def _skipped(function: str) -> Finding:
    f = Finding(Kind.GRAPH_BREAK, Severity.WARNING, "/ws/m.py", 9, 1, 9, 2, "Graph break")
    f.explanation = (
        f"Skip inlining function <function {function} at 0x7f00> since it was wrapped with "
        "`torch.compiler.disable` (reason: None)"
    )
    f.data = {"gb_type": DISABLED}
    return f


def test_only_the_function_the_rewrite_disabled_is_its_boundary() -> None:
    rw = Rewrite("compile-model", "t", "/ws/m.py", 1, 1, "x\n", False, boundary="Generate.forward")
    mine, other = _skipped("Generate.forward"), _skipped("BeamGenerate.forward")
    assert at_boundary([mine, other], rw) == [mine]
    plain = Rewrite("compile-step", "t", "/ws/m.py", 1, 1, "x\n", True)
    assert at_boundary([mine], plain) == []  # a rewrite that names no boundary allows none


def test_the_longer_prompt_grows_the_token_ids_and_nothing_else() -> None:
    ids, lengths = torch.tensor([[5, 6, 7]]), torch.tensor([3])
    got = longer_prompt(Call((ids, lengths), {"scores": torch.tensor([[1, 2]])}))
    assert got is not None
    assert got.args[0].tolist() == [[5, 6, 7, 7]] and got.args[1] is lengths
    assert got.kwargs["scores"].tolist() == [[1, 2]]  # not the prompt's shape
    # Inside a container, as ``generate(**batch)`` takes it; the caller's tensor untouched.
    batch = {"input_ids": ids, "attention_mask": torch.ones(1, 3, dtype=torch.long)}
    got = longer_prompt(Call((), {"batch": batch}))
    assert got is not None and got.kwargs["batch"]["input_ids"].shape == (1, 4)
    assert got.kwargs["batch"]["attention_mask"].shape == (1, 4)  # with its prompt
    assert ids.shape == (1, 3)
    # No integer tensor of two dimensions: no prompt to lengthen.
    assert longer_prompt(Call((torch.randn(2, 3), torch.tensor([1, 2])), {})) is None
