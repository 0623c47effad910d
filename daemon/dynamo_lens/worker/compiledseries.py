"""The compiled calls verification makes after the eager ones: the target compiled with the
workspace's backend and called over a series (the example's first call, again, with fresh values
of the same shapes, each declared variant, the inputs that take each path), with what each call
gave and what torch compiled and broke on over them (verify.py compares two series)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._dynamo.backends.registry import lookup_backend

from ..findings import Finding, Frame
from ..texts.locate import Workspace
from . import modelstate, torchcompat
from .breaks import break_findings, collect_sites, to_finding
from .effects import Effects, observing
from .equivalence import forward_and_grads
from .fingerprint import fingerprint
from .tracecapture import GraphBreakLog
from .usercode import Call, Target
from .verifyruns import clone


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
) -> Series:
    """``fn`` compiled and called over ``series`` as it runs (gradients too where it trains):
    each call's outputs and gradients, the state the first call left, the frames torch compiled
    again (its compilation metrics, by code object), and the breaks of every compile, later
    calls' included (a rewrite can make a recompile break where the first call did not).
    ``keep``: the compiled target stays compiled (``Series.compiled``) for the caller to time,
    where torch's caches are otherwise emptied after the calls. ``fresh=False``: torch's caches
    are not emptied first either, so that another target kept compiled stays warm: this one
    compiles under a backend object of its own (``_Apart``), and what torch learned from the
    other's compiles is forgotten (torchcompat.forget_compile_state)."""
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

    def frames() -> Counter[tuple[str, str, str]]:
        return Counter(
            (str(m.get("co_filename")), str(m.get("co_firstlineno")), str(m.get("co_name")))
            for m in torchcompat.compilation_metrics()
        )

    seen: Counter[tuple[str, str, str]] = Counter()
    logged0, metrics0 = 0, []
    with GraphBreakLog() as cap:
        for i, (call, start, seed) in enumerate(series):
            if start is not None:  # an input that takes a path from its own weights
                modelstate.load(t.fn, start)
            torch.manual_seed(seed)
            given = clone(call)
            with observing() as seen_effects:
                outs.append(forward_and_grads(compiled, given, grads, params_of=t.fn))
            effects.append(seen_effects)
            before = seen
            seen = frames()
            per_call.append(sum(seen.values()) - sum(before.values()))
            most.append(max((seen - before).values(), default=0))
            if i == 0:  # not ``if not state``: a plain function's state is empty
                state = modelstate.save(t.fn, parameters=False)
                logged0, metrics0 = len(cap.events), list(torchcompat.compilation_metrics())
                coarse = fingerprint(t.fn, given, values=False)
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
    )
