"""What verification allows and asks of a rewrite that moves the compile boundary
(worker/boundarycheck.py): the one break torch reports for the function the rewrite disabled,
and the prompt one token longer that shows the steps do not compile again. From the hostile
review of ``compile-model``."""

from __future__ import annotations

import inspect
import threading
from typing import Any

import torch
from dynamo_lens.findings import Finding, Kind, Severity
from dynamo_lens.fixes.boundary import STEPS, STEPS_TEXT
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


def _steps_class() -> Any:
    """The helper ``compile-model`` adds to a file, as the file defines it."""
    space: dict[str, Any] = {"torch": torch}
    exec(compile(STEPS_TEXT, "<helper>", "exec"), space)
    return space[STEPS]


class _Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.lin(x) if attention_mask is None else self.lin(x) * attention_mask


def test_the_helper_keeps_the_forwards_parameters_and_leaves_the_model_as_it_was() -> None:
    """From the second hostile review: a ``lambda *args`` hid ``attention_mask`` from
    generate()'s look at the forward's parameters (it then built no mask), and a forward the
    caller set inside the block was deleted on the way out."""
    steps, model = _steps_class(), _Model()
    before = inspect.signature(model.forward)
    with steps(model, backend="eager"):
        assert inspect.signature(model.forward) == before
        assert "forward" in vars(model)
        with steps(model, backend="eager"):  # nested: the outer block's forward stays
            pass
        assert "forward" in vars(model)
        x = torch.randn(2, 4)
        torch.testing.assert_close(model(x), model.lin(x), rtol=0, atol=0)
    assert "forward" not in vars(model)
    mine = lambda x: x  # noqa: E731  (the caller's own forward, set inside the block)
    with steps(model, backend="eager"):
        model.forward = mine
    assert vars(model)["forward"] is mine


def test_the_helper_is_safe_when_threads_share_the_model() -> None:
    steps, model = _steps_class(), _Model()
    barrier, errors = threading.Barrier(4), []

    def run() -> None:
        try:
            for _ in range(20):
                barrier.wait()
                with steps(model, backend="eager"):
                    model(torch.randn(2, 4))
        except BaseException as exc:  # collected: the test fails on any
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and "forward" not in vars(model)
