"""A compiled rewrite's calls after the first (the first again, fresh values, the declared
variants) against the original run in eager over the same calls: what each gave (outputs,
gradients where taken), the state it left, the tensors it was given after it (an in-place op)
and what it printed, logged and warned. compiled_differences (compiledseries.py) has the first
call; a rewrite equal there can still differ on a variant it compiles apart, or skip on the
second call what the first did (a guard that hides a warning, a timestamp)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from . import modelstate
from .compiledseries import Series
from .effects import Effects, observing
from .equivalence import Difference, compare, forward_and_grads
from .usercode import Call, Target, uncompiled
from .verifyruns import clone, tensors_given, without

Outs = list[tuple[Any, dict[str, torch.Tensor]]]
SeriesCalls = list[tuple[Call, dict[str, Any] | None, int]]


@dataclass
class EagerCalls:
    """The original's eager calls over a series, each as compiled_series records a call."""

    outs: Outs = field(default_factory=list)
    states: list[dict[str, Any]] = field(default_factory=list)
    effects: list[Effects] = field(default_factory=list)
    inputs: list[list[torch.Tensor]] = field(default_factory=list)


def eager_calls(t: Target, series: SeriesCalls, grads: bool, state: dict[str, Any]) -> EagerCalls:
    """``t`` in eager (uncompiled where it came compiled: ``@torch.compile``) over ``series``
    as compiled_series calls it compiled (from ``state``, each call's own start and seed, what
    a call leaves carried to the next). ``t``'s state is put back after."""
    modelstate.load(t.fn, state)
    out = EagerCalls()
    try:
        for call, start, seed in series:
            if start is not None:
                modelstate.load(t.fn, start)
            torch.manual_seed(seed)
            given = clone(call)
            with observing() as seen:
                out.outs.append(forward_and_grads(uncompiled(t.fn), given, grads, params_of=t.fn))
            out.effects.append(seen)
            out.states.append(modelstate.save(t.fn, parameters=False))
            out.inputs.append(tensors_given(given))
    finally:
        modelstate.load(t.fn, state)
    return out


def _named(state: dict[str, Any]) -> dict[str, Any]:
    """``modelstate.save``'s form of the state as entries named in ``fingerprint``'s words
    (``fc.weight``, ``fc:last_ms``): compared one by one, a structure that differs is one
    entry's, not the whole state's."""
    out: dict[str, Any] = {}
    for key, value in state.items():
        k, _, attrs = key.partition("\0")
        if attrs:
            for sub, fields in value.items():
                for a, v in fields.items():
                    out[f"{k}.{sub}:{a}" if k else f"{sub}:{a}"] = v
        elif isinstance(value, dict):
            for n, t in value.items():
                out[f"{k}.{n}" if k else n] = t
        else:
            out[key] = value
    return out


def _leaves_differ(mine: Any, theirs: Any, label: str) -> list[Difference]:
    return compare(mine, theirs, rtol=None, atol=None, grad=False, label=label)


def _left(
    state: tuple[dict[str, Any], dict[str, Any]],
    inputs: tuple[list[torch.Tensor], list[torch.Tensor]],
    skips: tuple[str, ...],
) -> list[Difference]:
    """What two runs of a call left that differs, leaf by leaf: the state (but the attributes
    in ``skips``) entry by entry, and the tensors it was given, after it. Where a rewrite of
    the calls passes a number as a tensor, the two were given different inputs: those are
    not compared."""
    a, b = (_named(without(x, set(), skips)) for x in state)
    out: list[Difference] = []
    for k in sorted(a.keys() | b.keys()):
        if k in a and k in b:
            out += _leaves_differ(a[k], b[k], f"state {k}")
        else:
            out.append(Difference(f"state {k}", "left by one run and not the other"))
    if len(inputs[0]) == len(inputs[1]):
        out += _leaves_differ(*inputs, "input after the call")
    return out


def later_differences(
    s: Series,
    eager: EagerCalls,
    grads: bool,
    compared: int,
    skips: tuple[str, ...],
    again: EagerCalls | None = None,
) -> list[str]:
    """The compiled calls, up to ``compared``, against the original's eager ones at the same
    place in the series, within tolerance: after the first (compiled_differences has its
    outputs, state and effects), the outputs, gradients where taken, the state each leaves
    (but what the rewrite says compiled calls skip, ``skips``) and what it printed, logged and
    warned; on every call, the tensors it was given, after it. ``again``: a second eager run of
    the series; a leaf of the state or the inputs, or an effect's record, that differs between
    the two at a call is noise there (a timer's reading), and only that one is not compared."""
    out: list[str] = []
    for i in range(min(compared, len(eager.outs))):
        how = f"call {i + 1} of {len(eager.outs)}"
        mine = (s.states[i], eager.states[i]) if i else ({}, {})
        d = _left(mine, (s.inputs[i], eager.inputs[i]), skips)
        if again is not None and d:
            theirs = (again.states[i], eager.states[i]) if i else ({}, {})
            noisy = {x.where for x in _left(theirs, (again.inputs[i], eager.inputs[i]), skips)}
            d = [x for x in d if x.where not in noisy]
        if i:
            (out_c, g_c), (out_e, g_e) = s.outs[i], eager.outs[i]
            gave = compare(out_c, out_e, rtol=None, atol=None, grad=False, label="output")
            if grads:
                gave += compare(g_c, g_e, rtol=None, atol=None, grad=True, label="grad")
            d = gave + d
        out += [f"{how}: {x.where}: {x.detail}" for x in d]
        if i:
            unstable = eager.effects[i].unstable(again.effects[i]) if again is not None else {}
            out += s.effects[i].differences(eager.effects[i], how, unstable)
    return out


def later_calls_differ(
    s: Series,
    original: Target,
    series: SeriesCalls,
    grads: bool,
    state: dict[str, Any],
    compared: int,
    skips: tuple[str, ...] = (),
) -> list[str]:
    """later_differences against ``original`` run in eager over ``series``; where the original
    raises there and the compiled rewrite ran, that. Where they differ, the original's series
    runs once more: what differs between its own two runs is forgiven, call by call, leaf by
    leaf."""
    try:
        eager = eager_calls(original, series, grads, state)
    except Exception as exc:
        return [f"the original raises {type(exc).__name__} in eager where the compiled rewrite ran"]
    if not later_differences(s, eager, grads, compared, skips):
        return []
    try:
        again = eager_calls(original, series, grads, state)
    except Exception:  # raising on a second run is noise of its own: nothing is forgiven
        again = None
    return later_differences(s, eager, grads, compared, skips, again)
