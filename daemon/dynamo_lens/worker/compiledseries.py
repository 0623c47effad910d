"""The compiled calls verification makes after the eager ones: the target compiled with the
workspace's backend and called over a series (the example's first call, again, with fresh values
of the same shapes, each declared variant, the inputs that take each path), with what each call
gave and what torch compiled and broke on over them (verify.py compares two series), and how
the compiled rewrite differs from the original in eager."""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._dynamo.backends.registry import lookup_backend

from ..findings import Finding, Frame
from ..fixes.catalogue import Rewrite
from ..texts.locate import Workspace
from . import modelstate, torchcompat
from .breaks import break_findings, collect_sites, to_finding
from .effects import Effects, observing
from .equivalence import compare, forward_and_grads
from .fingerprint import attribute_of, fingerprint
from .fingerprint import changed as fingerprints_differ
from .runnoise import RunNoise, effects_differ
from .tracecapture import GraphBreakLog
from .usercode import Call, Target
from .verifyruns import Run, clone, tensors_given, without


@dataclass
class Series:
    outs: list[tuple[Any, dict[str, torch.Tensor]]]  # each call's outputs and gradients
    effects: list[Effects]  # what each call printed, logged and warned
    state: dict[str, Any]  # buffers and plain attributes after the first call
    coarse: dict[str, str]  # its fingerprint without floating values
    recompiles: int  # frames torch compiled again
    breaks: list[Finding]  # every break torch logged over the calls
    # Per call, the frames torch compiled during it, and the most times one frame was
    # compiled during it (a frame compiled again step after step).
    per_call: list[int] = field(default_factory=list)
    most: list[int] = field(default_factory=list)
    # The compiled target, warm, where the caller asked to keep it (steadytime.py times it).
    compiled: Any = None
    # Frames whose graph holds at least one op: a frame torch skipped, or traced to nothing,
    # compiles nothing (a rewrite that moves the boundary must leave something compiled).
    graphs: int = 0
    # The breaks of the first call's compiles, as the breaks check finds them (the frames
    # torch gave up on or skipped whole included): what tracing that call would find, in the
    # grad mode the calls ran in.
    first_breaks: list[Finding] = field(default_factory=list)
    # Torch gave up on a frame at its recompile limit over the calls: from there it runs that
    # frame uncompiled (steadytime.py times such a target as eager).
    gave_up: bool = False
    # Where the caller asked (``upto``): torch's compilation metrics over the first ``upto``
    # calls, and how many there were after each, as the recompile check reads them.
    metrics: list[dict[str, Any]] = field(default_factory=list)
    after_call: list[int] = field(default_factory=list)
    # The buffers and plain attributes after each call (modelstate.save's form).
    states: list[dict[str, Any]] = field(default_factory=list)
    # The tensors each call was given, after it (an in-place op on the caller's tensor).
    inputs: list[list[torch.Tensor]] = field(default_factory=list)

    @property
    def out(self) -> Any:
        return self.outs[0][0]

    @property
    def grads(self) -> dict[str, torch.Tensor]:
        return self.outs[0][1]


class _Apart:
    """The workspace's backend as an object of its own. Torch keeps a function's compiles per
    backend object: a series compiled beside another target's kept compile then neither runs
    on nor counts that one's graphs where the two share a code object (a library's function
    both import, the wrapper torch compiles a module of its own, ``nn.Sequential``, through)."""

    def __init__(self, backend: Any) -> None:
        self._backend = lookup_backend(backend) if isinstance(backend, str) else backend

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        return self._backend(gm, example_inputs)


def compiled_series(
    t: Target,
    series: list[tuple[Call, dict[str, Any] | None, int]],
    backend: Any,
    grads: bool,
    ws: Workspace,
    label: str,
    anchor: Frame | None,
    keep: bool = False,
    fresh: bool = True,
    upto: int = 0,
) -> Series:
    """``fn`` compiled and called over ``series`` as it runs (gradients too where it trains):
    each call's outputs and gradients, the state the first call left, the frames torch compiled
    again (its compilation metrics, by code object), and the breaks of every compile, later
    calls' included (a rewrite can make a recompile break where the first call did not).
    ``keep``: the compiled target stays compiled (``Series.compiled``) for the caller to time,
    where torch's caches are otherwise emptied after the calls. ``fresh=False``: torch's caches
    are not emptied first either, so that another target kept compiled stays warm: this one
    compiles under a backend object of its own (``_Apart``), and what torch learned from the
    other's compiles is forgotten (torchcompat.forget_compile_state). ``upto``: the first
    ``upto`` calls are the recompile check's too (verifyrecompiles.py reads its answer from
    them): their compiles log the guards' user lines, as the check's do."""
    if fresh:
        torch._dynamo.reset()
    else:
        torchcompat.forget_compile_state()
        backend = _Apart(backend)
    torchcompat.clear_compilation_metrics()
    compiled = torch.compile(t.fn, backend=backend)
    outs: list[tuple[Any, dict[str, torch.Tensor]]] = []
    effects: list[Effects] = []
    state: dict[str, Any] = {}
    coarse: dict[str, str] = {}
    per_call: list[int] = []
    most: list[int] = []
    states: list[dict[str, Any]] = []
    inputs: list[list[torch.Tensor]] = []

    def frames() -> Counter[tuple[str, str, str]]:
        return Counter(
            (str(m.get("co_filename")), str(m.get("co_firstlineno")), str(m.get("co_name")))
            for m in torchcompat.compilation_metrics()
        )

    seen: Counter[tuple[str, str, str]] = Counter()
    logged0, metrics0 = 0, []
    checked: list[dict[str, Any]] = []
    after_call: list[int] = []
    # The guard-latency profile torch takes after each compile is a metric nothing here reads.
    quick = torchcompat.without_guard_latency_profile()
    lines = torchcompat.guard_user_lines() if upto else contextlib.nullcontext()
    with GraphBreakLog() as cap, quick, lines:
        for i, (call, start, seed) in enumerate(series):
            if start is not None:  # an input that takes a path from its own weights
                modelstate.load(t.fn, start)
            torch.manual_seed(seed)
            given = clone(call)
            with observing() as seen_effects:
                outs.append(forward_and_grads(compiled, given, grads, params_of=t.fn))
            effects.append(seen_effects)
            states.append(modelstate.save(t.fn, parameters=False))
            inputs.append(tensors_given(given))
            before = seen
            seen = frames()
            per_call.append(sum(seen.values()) - sum(before.values()))
            most.append(max((seen - before).values(), default=0))
            if i == 0:  # not ``if not state``: a plain function's state is empty
                state = modelstate.save(t.fn, parameters=False)
                logged0, metrics0 = len(cap.events), list(torchcompat.compilation_metrics())
                coarse = fingerprint(t.fn, given, values=False)
            if i < upto:
                checked = torchcompat.compilation_metrics()
                after_call.append(len(checked))
    seen = frames()
    ops = [m.get("graph_op_count") for m in torchcompat.compilation_metrics()]
    graphs = sum(1 for n in ops if isinstance(n, int) and n > 0)
    gave_up = any(torchcompat.hit_recompile_limit(m) for m in torchcompat.compilation_metrics())
    found = [to_finding(s, label) for s in collect_sites(None, cap, ws, anchor)]
    first = break_findings(None, cap.first(logged0), metrics0, ws, anchor, label)
    if not keep:
        torch._dynamo.reset()
    return Series(
        outs,
        effects,
        state,
        coarse,
        sum(n - 1 for n in seen.values()),
        found,
        per_call,
        most,
        compiled if keep else None,
        graphs,
        first,
        gave_up,
        checked,
        after_call,
        states,
        inputs,
    )


def compiled_differences(
    s: Series,
    first: Run,
    extra: list[Run],
    grads: bool,
    noise: RunNoise,
    rewrite: Rewrite,
) -> list[str]:
    """The compiled rewrite against the original in eager, within tolerance: the first call's
    outputs, gradients and the state it left (a side effect a guard now skips; not what the
    rewrite says compiled calls skip, ``Rewrite.skips``), and the outputs on the inputs that
    take each path (the last calls of the series)."""
    diffs = compare(s.out, first.out, rtol=None, atol=None, grad=False, label="output")
    if grads:
        diffs += compare(s.grads, first.grads, rtol=None, atol=None, grad=True, label="grad")
    state, expected = (
        without(s.state, set(), rewrite.skips),
        without(first.buffers, set(), rewrite.skips),
    )
    if compare(state, expected, rtol=None, atol=None, grad=False, label="state"):
        state, expected = without(state, noise(first)), without(expected, noise(first))
    diffs += compare(state, expected, rtol=None, atol=None, grad=False, label="state")
    out = [f"{d.where}: {d.detail}" for d in diffs]
    # What a compiled call left beyond the floats (a list it records into, a global counter),
    # but for what differs between the original's own runs and what the rewrite says it skips.
    moved = [
        k
        for k in fingerprints_differ(s.coarse, first.coarse)
        if k != "rng" and k not in noise(first) and attribute_of(k) not in rewrite.skips
    ]
    if moved:
        out.append(f"state: the compiled rewrite leaves other state in {', '.join(moved[:3])}")
    # What the compiled call printed, logged and warned: a print a guard skips, a warning a
    # setting drops, is what the user no longer sees.
    out += effects_differ(s.effects[0], first, "compiled, the example", noise)
    tail = len(s.outs) - len(extra)
    for (out_c, g_c), eff, r in zip(s.outs[tail:], s.effects[tail:], extra, strict=True):
        d2 = compare(out_c, r.out, rtol=None, atol=None, grad=False, label="output")
        if grads:
            d2 += compare(g_c, r.grads, rtol=None, atol=None, grad=True, label="grad")
        out += [f"{r.how}: {d.where}: {d.detail}" for d in d2]
        out += effects_differ(eff, r, f"compiled, {r.how}", noise)
    return out
