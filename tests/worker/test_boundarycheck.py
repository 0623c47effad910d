"""What verification allows and asks of a rewrite that moves the compile boundary
(worker/boundarycheck.py): the one break torch reports for the function the rewrite disabled,
and the prompt one token longer that shows the steps do not compile again. From the hostile
review of ``compile-model``."""

from __future__ import annotations

import gc
import inspect
import threading
from typing import Any

import torch
from dynamo_lens.findings import Finding, Kind, Severity
from dynamo_lens.fixes.boundary import STEP, STEP_TEXT, STEPS, STEPS_TEXT
from dynamo_lens.fixes.rewrite import Rewrite
from dynamo_lens.texts.locate import Workspace
from dynamo_lens.worker.boundarycheck import at_boundary, longer_prompt, steps_settle
from dynamo_lens.worker.compiledseries import compiled_series
from dynamo_lens.worker.usercode import Call, Target

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


def _step_function() -> Any:
    """The helper ``compile-step`` adds to a file, as the file defines it."""
    space: dict[str, Any] = {"torch": torch}
    exec(compile(STEP_TEXT, "<helper>", "exec"), space)
    return space[STEP]


def test_the_step_helper_shares_a_function_between_like_modules_only() -> None:
    """Two ``nn.Linear`` of other shapes through one code object would be a recompile of
    torch's, and identical layers through one function each a compile each: modules of one
    class and the same parameter shapes share a function, others get their own. The module is
    never changed (its hooks run, eagerly it runs eagerly), anything else comes back as it is,
    and a module that is gone leaves nothing behind."""
    step = _step_function()
    a, b, c = torch.nn.Linear(4, 3), torch.nn.Linear(3, 2), torch.nn.Linear(4, 3)
    seen: list[int] = []
    a.register_forward_hook(lambda m, i, o: seen.append(1))
    x = torch.randn(2, 4)
    fa, fb, fc = step(a), step(b), step(c)
    assert fa.__func__ is not fb.__func__ and fa.__func__ is fc.__func__
    assert fa.__self__ is a and fc.__self__ is c and step(a).__func__ is fa.__func__
    assert {fa.__func__.__code__.co_name, fb.__func__.__code__.co_name} == {
        "Linear_step_1",
        "Linear_step_2",
    }
    torch.testing.assert_close(fb(fa(x)), b(a(x)), rtol=0, atol=0)
    assert seen == [1, 1] and "forward" not in vars(a)
    assert step(None) is None and step(len) is len
    calls = step.__wrapped__.__defaults__[0] if hasattr(step, "__wrapped__") else None
    del a, b, c, fa, fb, fc
    gc.collect()
    assert calls is None or len(calls) == 0


class _Torchs(torch.nn.Module):
    """A host decision around a module of torch's own, its function kept out of the graph."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    @torch.compiler.disable(recursive=False)
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) if float(x.sum()) > 0 else -self.lin(x)


class _Through(_Torchs):
    @torch.compiler.disable(recursive=False)
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        step = self.step
        return step(self.lin)(x) if float(x.sum()) > 0 else -step(self.lin)(x)


def test_a_step_torch_never_compiles_as_a_frame_of_its_own_is_no_compiled_step(
    tmp_path: Any,
) -> None:
    """Found on the static corpus: torch compiles no frame of ``nn.Linear`` where the function
    around it is skipped, so "compile the step" compiled nothing and torch counted no break:
    the check now asks for a compiled graph with an op in it. Through the helper the same
    step is compiled."""
    x = torch.randn(2, 4)
    rw = Rewrite("compile-step", "t", str(tmp_path / "m.py"), 1, 1, "x\n", True)
    pair = [(Call((x,), {}), None, 0), (Call((x,), {}), None, 0)]
    for model, graphs in ((_Torchs(), 0), (_Through(), 1)):
        model.step = _step_function()  # type: ignore[attr-defined]
        target = Target("compile_example", model, [Call((x,), {})], rw.path, 1, "example")
        series = compiled_series(target, pair, "eager", False, Workspace(tmp_path), "t", None)
        assert series.graphs == graphs and series.per_call == [graphs, 0], series.per_call
        again = series
        ok, said = steps_settle(series, Call((x,), {}), rw, lambda c: again, target, {})  # noqa: B023
        assert ok == bool(graphs), said
        if not graphs:
            assert said.endswith("nothing the steps call was compiled"), said
