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
from torch.utils._pytree import keystr, tree_flatten_with_path

from . import modelstate
from .compiledseries import Series
from .effects import Effects, numbers_masked, observing
from .equivalence import Difference, compare, forward_and_grads, tolerance
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


def _leaves_differ(mine: Any, theirs: Any, label: str, exact: bool = False) -> list[Difference]:
    """Within tolerance; ``exact``: bit for bit, as two runs of the original are told apart (a
    timer read twice a millisecond apart is noise, though within a float's tolerance)."""
    tol = 0.0 if exact else None
    return compare(mine, theirs, rtol=tol, atol=tol, grad=False, label=label)


def _left(
    calls: Series | EagerCalls, i: int, inputs: bool, skips: tuple[str, ...]
) -> dict[str, Any]:
    """What call ``i`` left, entry by entry: after the first, the state (but the attributes in
    ``skips``); with ``inputs``, the tensors it was given, after it."""
    state = calls.states[i] if i else {}
    return _entries(state, calls.inputs[i] if inputs else [], skips)


def _found(
    calls: Series | EagerCalls, series: SeriesCalls, i: int, inputs: bool, skips: tuple[str, ...]
) -> dict[str, Any]:
    """What call ``i`` found, as ``_left`` names it: the state it started from (its own start,
    else what the call before left) and the tensors it was given."""
    call, start, _ = series[i]
    state = {} if not i else start if start is not None else calls.states[i - 1]
    return _entries(state, tensors_given(call) if inputs else [], skips)


def _entries(
    state: dict[str, Any], inputs: list[torch.Tensor], skips: tuple[str, ...]
) -> dict[str, Any]:
    out = {f"state {k}": v for k, v in _named(without(state, set(), skips)).items()}
    out.update({f"input after the call [{j}]": t for j, t in enumerate(inputs)})
    return out


_NONE = object()  # no value before the call (an entry the call made)


def _noise_only(mine: Any, theirs: Any, again: Any, before: tuple[Any, Any]) -> bool:
    """Whether ``mine`` differs from ``theirs`` (the original's run) only where the original's
    two runs (``theirs``, ``again``) differ too: a tensor element by element, anything else
    with its numbers masked where only numbers differ between the two runs (a timestamp beside
    a label must not hide the label). In a tensor, noise forgives another value, not a write
    skipped: an element both of the original's runs changed and the rewrite's call left as it
    found it (``before``: what each found) is a difference."""
    if not _leaves_differ(again, theirs, "", exact=True):
        return False  # the original's runs agree: no noise here
    if all(isinstance(v, torch.Tensor) for v in (mine, theirs, again)) and (
        mine.shape == theirs.shape == again.shape and mine.dtype == theirs.dtype == again.dtype
    ):
        noisy = ~_close(again, theirs, exact=True)
        bad = ~_close(mine, theirs) & ~noisy
        if all(
            isinstance(b, torch.Tensor) and b.shape == mine.shape and b.dtype == mine.dtype
            for b in before
        ):
            mine_before, theirs_before = before
            written = ~_close(theirs, theirs_before, exact=True)
            written &= ~_close(again, theirs_before, exact=True)
            bad |= noisy & written & _close(mine, mine_before)
        return not bool(bad.any())
    # Not for a plain value: an attribute the original itself skips when compiled (behind an
    # ``is_compiling()`` guard a fix applied before wrote) is left as found by the compiled
    # rewrite too, which only the original compiled could tell apart.
    masked = numbers_masked(repr(theirs))
    return numbers_masked(repr(mine)) == masked or numbers_masked(repr(again)) != masked


def _close(a: torch.Tensor, b: torch.Tensor, exact: bool = False) -> torch.Tensor:
    a, b = a.detach().cpu(), b.detach().cpu()
    if exact:
        return (a == b) | (a.isnan() & b.isnan()) if a.is_floating_point() else a == b
    if a.is_floating_point() or a.is_complex():
        r, t = tolerance(b.dtype, None, None, False)
        return torch.isclose(a, b, rtol=r, atol=t, equal_nan=True)
    return a == b


def _left_differ(
    mine: dict[str, Any],
    theirs: dict[str, Any],
    again: dict[str, Any] | None,
    before: tuple[dict[str, Any], dict[str, Any]],
) -> list[Difference]:
    """Two calls' state and inputs after them (``_left``), entry by entry, within tolerance,
    but for what is noise in the original's own two runs (``again``: its second; ``before``:
    what the rewrite's call and the original's found, ``_found``)."""
    out: list[Difference] = []
    for k in sorted(mine.keys() | theirs.keys()):
        if k not in mine or k not in theirs:
            out.append(Difference(k, "left by one run and not the other"))
            continue
        d = _leaves_differ(mine[k], theirs[k], k)
        found = (before[0].get(k, _NONE), before[1].get(k, _NONE))
        second = _NONE if again is None else again.get(k, _NONE)
        if d and second is not _NONE:
            if _noise_only(mine[k], theirs[k], second, found):
                continue
            # Said by the leaves that are not noise, where there are any.
            noisy = {x.where for x in _leaves_differ(second, theirs[k], k, exact=True)}
            d = [x for x in d if x.where not in noisy] or d
        out += _words_first(d, k, mine[k], theirs[k])
    return out


def _words_first(d: list[Difference], k: str, mine: Any, theirs: Any) -> list[Difference]:
    """``d`` with the leaves that differ in more than their numbers first: a label that
    changed says more than a timing beside it, which two runs cannot hold equal."""
    ours, others = (
        {f"{k}{keystr(p)}": v for p, v in tree_flatten_with_path(x)[0]} for x in (mine, theirs)
    )

    def numbers_only(x: Difference) -> bool:
        a, b = ours.get(x.where, _NONE), others.get(x.where, _NONE)
        return numbers_masked(repr(a)) == numbers_masked(repr(b))

    return sorted(d, key=numbers_only)


def later_differences(
    s: Series,
    eager: EagerCalls,
    series: SeriesCalls,
    grads: bool,
    compared: int,
    skips: tuple[str, ...],
    again: EagerCalls | None = None,
) -> list[str]:
    """The compiled calls, up to ``compared``, against the original's eager ones at the same
    place in the series, within tolerance: after the first (compiled_differences has its
    outputs, state and effects), the outputs, gradients where taken, the state each leaves
    (but what the rewrite says compiled calls skip, ``skips``) and what it printed, logged and
    warned; on every call, the tensors it was given, after it (where a rewrite of the calls
    passes a number as a tensor, the two were given different inputs: not compared).
    ``again``: a second eager run of the series; what differs between the two at a call is
    noise there (a timer's reading), and only that (_noise_only, Effects.differences)."""
    out: list[str] = []
    for i in range(min(compared, len(eager.outs))):
        how = f"call {i + 1} of {len(eager.outs)}"
        ins = len(s.inputs[i]) == len(eager.inputs[i])
        noise = _left(again, i, ins, skips) if again is not None else None
        found = (_found(s, series, i, ins, skips), _found(eager, series, i, ins, skips))
        d = _left_differ(_left(s, i, ins, skips), _left(eager, i, ins, skips), noise, found)
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
    if not later_differences(s, eager, series, grads, compared, skips):
        return []
    try:
        again = eager_calls(original, series, grads, state)
    except Exception:  # raising on a second run is noise of its own: nothing is forgiven
        again = None
    return later_differences(s, eager, series, grads, compared, skips, again)
