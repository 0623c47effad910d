"""Inputs that take each path of the branch a rewrite removed.

A selection (``torch.where``) computes both arms; a loop run to its end computes what the exit
skipped. Equal outputs on the example show only the path the example took. So the original runs
with its branch's test probed (fixes/probe.py) on variations of the example's inputs (scaled,
negated, zeroed, random, with a NaN or an Inf), until inputs are found that take each path: the
test true on one, false on another (for a loop exit: one that exits, one that runs to its end).
Verification then compares the rewrite with the original on those too. Where none takes the
other path, the rewrite is equal on the example only, and says so.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._pytree import tree_map

from ..fixes.probe import PROBE
from .usercode import Call

# Variations tried per example call before giving up, and the time they may take.
MAX_CANDIDATES = 24
BUDGET_SECONDS = 30.0


class _Probe:
    def __init__(self) -> None:
        self.seen: list[bool] = []

    def __call__(self, value: Any) -> bool:
        taken = bool(value)  # what the original's ``if`` asks of the tensor
        self.seen.append(taken)
        return taken


@contextlib.contextmanager
def probing() -> Iterator[_Probe]:
    """While open, the probed text's ``__dynamo_lens_probe__(test)`` records each test."""
    probe = _Probe()
    setattr(builtins, PROBE, probe)
    try:
        yield probe
    finally:
        with contextlib.suppress(AttributeError):
            delattr(builtins, PROBE)


@dataclass
class Outcome:
    call: Call
    how: str  # what the variation was, for the verdict's detail
    tests: list[bool]  # each evaluation of the branch's test, in order
    raised: bool  # the original raised on it (a check that failed)
    state: dict[str, Any] | None = None  # other weights to run with (modelstate.save's form)
    seed: int = 0  # the seed both versions run with (a branch on a random draw)
    # Also called compiled, in the series whose recompiles are counted: not another size,
    # dtype or mode (torch recompiles for those, and the original may not compile at all).
    compiled: bool = True


@dataclass
class Coverage:
    """The inputs to compare on beyond the example, and whether they and the example take
    each path."""

    extra: list[Outcome] = field(default_factory=list)
    both: bool = False
    tried: int = 0
    detail: str = ""


def _kinds(o: Outcome, loop: bool) -> set[str]:
    """The paths a call took: for an ``if``, the test true and/or false; for a loop exit,
    whether it exited at all."""
    if loop:
        return {"exit" if any(o.tests) else "end"}
    # A branch that runs several times in one call (a layer used twice, a loop): only a call
    # whose every test went one way shows that way's outputs and gradients whole (one where
    # no test held gives its weights no gradient at all).
    seen = {"true" if t else "false" for t in o.tests}
    return seen if len(seen) == 1 else {"mixed"}


def _variations(call: Call) -> Iterator[tuple[str, Call]]:
    """The example's call with every floating tensor changed alike (and integer and bool
    tensors redrawn): scaled, negated, zeroed, random, with a NaN or an Inf."""

    def each(how: str, f: Callable[[torch.Tensor], torch.Tensor]) -> tuple[str, Call]:
        def g(v: Any) -> Any:
            if not isinstance(v, torch.Tensor):
                return v
            with torch.no_grad():
                out = f(v.detach())
            return out.requires_grad_(v.requires_grad) if out.is_floating_point() else out

        return how, Call(tree_map(g, call.args), tree_map(g, call.kwargs))

    def floats(f: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
        return lambda t: f(t.clone()) if t.is_floating_point() or t.is_complex() else t.clone()

    def poke(value: float) -> Callable[[torch.Tensor], torch.Tensor]:
        def f(t: torch.Tensor) -> torch.Tensor:
            if t.numel():
                t.view(-1)[0] = value
            return t

        return f

    def others(seed: int) -> Callable[[torch.Tensor], torch.Tensor]:
        def f(t: torch.Tensor) -> torch.Tensor:
            g = torch.Generator().manual_seed(seed)
            if t.is_floating_point():
                return torch.randn(t.shape, generator=g, dtype=t.dtype).to(t.device)
            if t.dtype == torch.bool:
                return (torch.rand(t.shape, generator=g) < 0.5).to(t.device)
            if t.numel() and not t.is_complex():
                # Past the example's range on odd seeds: an index out of range, a negative id.
                lo, hi = int(t.min()), int(t.max())
                if seed % 2:
                    info = torch.iinfo(t.dtype)
                    lo = max(lo - 2 * (hi - lo) - 3, info.min)
                    hi = min(hi + 2 * (hi - lo) + 3, info.max - 1)
                return torch.randint(lo, hi + 1, t.shape, generator=g, dtype=t.dtype).to(t.device)
            return t.clone()

        return f

    yield each("negated", floats(lambda t: -t))
    yield each("zeros", floats(torch.zeros_like))
    yield each("ones", floats(torch.ones_like))
    yield each("absolute", floats(torch.abs))
    yield each("negative absolute", floats(lambda t: -t.abs()))
    for k in (1e-3, 1e3, -1e3, 1e5, -1e5, 1e38):
        yield each(f"scaled by {k:g}", floats(functools.partial(torch.mul, other=k)))
    yield each("a NaN", floats(poke(float("nan"))))
    yield each("an Inf", floats(poke(float("inf"))))
    yield each("a -Inf", floats(poke(float("-inf"))))
    for seed in range(1, 9):
        yield each(f"random (seed {seed})", others(seed))
    yield each("negated, integers redrawn", lambda t: -t if t.is_floating_point() else others(0)(t))


def _state_variations(state: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The target's saved state (modelstate.save) with every floating weight and buffer
    changed alike: a branch on what the weights compute (``h.min() > 0`` after a layer) is
    taken or not by the weights as much as by the input, and a rewrite must be equal for any."""

    def each(how: str, f: Callable[[torch.Tensor], torch.Tensor]) -> tuple[str, dict[str, Any]]:
        def g(v: Any) -> Any:
            return f(v.clone()) if isinstance(v, torch.Tensor) and v.is_floating_point() else v

        return how, {k: v if "\0" in k else tree_map(g, v) for k, v in state.items()}

    yield each("weights absolute", torch.abs)  # first: tiers() pairs it with huge inputs too
    yield each("weights negated", torch.neg)
    yield each("weights negative absolute", lambda t: -t.abs())
    yield each("weights zeros", torch.zeros_like)
    yield each("weights scaled by 1e3", functools.partial(torch.mul, other=1e3))


def _structural(call: Call) -> Iterator[tuple[str, Call, dict[str, Any] | None]]:
    """The example's call with its batch doubled (every tensor of one dimension or more, with
    the values negated in the second half), cut to one, and its floating inputs as float64,
    bfloat16 and float16."""

    def batch(t: Any) -> Any:
        if not isinstance(t, torch.Tensor) or t.dim() == 0:
            return t
        with torch.no_grad():
            other = -t if t.is_floating_point() else t
            out = torch.cat([t.detach(), other.detach()], 0)
        return out.requires_grad_(t.requires_grad) if out.is_floating_point() else out

    def first(t: Any) -> Any:
        if not isinstance(t, torch.Tensor) or t.dim() == 0 or t.shape[0] < 2:
            return t
        return t.detach()[:1].clone().requires_grad_(t.requires_grad and t.is_floating_point())

    def cast(dtype: torch.dtype) -> Callable[[Any], Any]:
        def f(t: Any) -> Any:
            if not isinstance(t, torch.Tensor) or not t.is_floating_point():
                return t
            return t.detach().to(dtype).requires_grad_(t.requires_grad)

        return f

    yield "batch doubled", Call(tree_map(batch, call.args), tree_map(batch, call.kwargs)), None
    yield "a batch of one", Call(tree_map(first, call.args), tree_map(first, call.kwargs)), None
    for dtype in (torch.float64, torch.bfloat16, torch.float16):
        f = cast(dtype)
        name = str(dtype).replace("torch.", "")
        yield f"as {name}", Call(tree_map(f, call.args), tree_map(f, call.kwargs)), None


def training(state: dict[str, Any]) -> dict[str, Any] | None:
    """``state`` with every submodule in training mode, where some was in eval; else None."""
    attributes = [v for k, v in state.items() if "\0" in k]
    if not any(a.get("training") is False for v in attributes for a in v.values()):
        return None
    return {
        k: ({sub: {**a, "training": True} for sub, a in v.items()} if "\0" in k else v)
        for k, v in state.items()
    }


def cover(
    run: Callable[[Call, dict[str, Any] | None, int], None],
    calls: list[Call],
    probe: _Probe,
    state: dict[str, Any],
    *,
    loop: bool,
    thorough: bool = True,
) -> Coverage:
    """Runs the probed original (``run``) on the example's calls, then on variations of their
    inputs, and, ``thorough``, of the seed (a branch on a random draw), then of the target's
    weights (with the inputs as given, made absolute, negated, and for absolute weights
    absolute and huge: an overflow to Inf), until the calls together take each path; the
    variations that showed a path, kept."""
    seen: set[str] = set()

    def once(call: Call, how: str, weights: dict[str, Any] | None = None, seed: int = 0) -> Outcome:
        probe.seen.clear()
        raised = False
        try:
            run(call, weights, seed)
        except Exception:  # the original raising is a path too (a check that failed)
            raised = True
        return Outcome(call, how, list(probe.seen), raised, weights, seed)

    reached = False
    for call in calls:
        o = once(call, "example")
        reached = reached or bool(o.tests)
        seen |= _kinds(o, loop)
    want = {"exit", "end"} if loop else {"true", "false"}
    cov = Coverage()
    if not reached:
        cov.detail = "the example's calls never reach the branch"
        return cov

    def tiers() -> Iterator[tuple[str, Call, dict[str, Any] | None, int]]:
        for call in calls:
            for how, variant in _variations(call):
                yield how, variant, None, 0
        if not thorough:  # the claim does not rest on it (an assert kept in the graph)
            return
        for seed in range(1, 7):
            yield f"seed {seed}", calls[0], None, seed
        inputs = dict(_variations(calls[0]))
        huge = dict(_variations(inputs["absolute"]))["scaled by 1e+38"]
        for how, weights in _state_variations(state):
            for with_inputs, call in (
                ("", calls[0]),
                (", inputs absolute", inputs["absolute"]),
                (", inputs negated", inputs["negated"]),
                *([(", inputs absolute and huge", huge)] if how == "weights absolute" else []),
            ):
                yield how + with_inputs, call, weights, 0

    started = time.monotonic()
    kept: Counter[str] = Counter()  # variations kept, by the path they took
    for how, variant, weights, seed in tiers():
        if all(kept[k] for k in want) or cov.tried >= MAX_CANDIDATES * len(calls) + 25:
            break  # a variation on each path (the example's too: other values, same path)
        if time.monotonic() - started > BUDGET_SECONDS:
            break
        cov.tried += 1
        o = once(variant, how, weights, seed)
        kinds = _kinds(o, loop) & want
        if any(not kept[k] for k in kinds):
            cov.extra.append(o)
            kept.update(kinds)
        seen |= kinds
    if thorough:
        # Whatever path they take: other sizes, dtypes and training mode, where the original
        # runs on them (arms of one shape only at the example's size, an arm that draws
        # random numbers only in training).
        twins = [Outcome(c, "example", [], False) for c in calls] + list(cov.extra)
        for how, variant, weights in _structural(calls[0]):
            # Kept raising too: where the original raises (a condition of one value only at
            # the example's size), the rewrite must raise as well.
            o = once(variant, how, weights)
            cov.tried += 1
            o.compiled = False
            cov.extra.append(o)
        # Each path again with the target in training mode (a dropout in an arm draws only
        # there: the rewrite would draw on the path the original skips).
        for o in twins:
            trained = training(o.state or state)
            if trained is not None:
                t = once(o.call, f"{o.how}, training mode", trained, o.seed)
                if not t.raised:
                    cov.tried += 1
                    t.compiled = False
                    cov.extra.append(t)
    cov.both = seen >= want
    if not cov.both:
        missing = " or ".join(sorted(want - seen))
        cov.detail = f"no input found that takes the other path ({missing}; {cov.tried} tried)"
    return cov
