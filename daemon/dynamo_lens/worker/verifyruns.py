"""Verification's eager runs: the original and the rewrite called on the same inputs from the
same state and seed, and compared on everything a caller can observe: outputs and gradients
(bitwise for an exact rewrite), whether it raised and what (type and message), what it printed,
logged and warned (effects.py), and the state it left (weights, buffers, plain
attributes, optimizers, torch's random generator). The inputs are the example's and, for a
rewrite that removed a branch, inputs that take each of its paths (branchpaths.py)."""

from __future__ import annotations

import copy
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from ..fixes.probe import probed
from ..texts.errors import safe_str
from ..texts.locate import Workspace
from . import branchpaths, modelstate, torchcompat
from .effects import Effects, observing
from .equivalence import compare, forward_and_grads
from .fingerprint import changed as fingerprints_differ
from .fingerprint import fingerprint
from .shadow import import_shadowed, shadowed
from .usercode import Call, Target, uncompiled


def clone(call: Call) -> Call:
    """The call with fresh copies of its tensors, which keep torch's marks of their
    dimensions (``mark_dynamic``'s ``_dynamo_dynamic_indices`` and the like): without them the
    copy compiles as a static shape the user's call never does (a mark-dynamic fix's compiled
    calls were checked on a graph it never runs). Other attributes are not copied: one the
    user's code mutates would carry from one run to the next (a copy of its own is no less
    wrong for an object the call shares)."""

    def c(v: Any) -> Any:
        if not isinstance(v, torch.Tensor):
            return v
        return _with_marks(v, v.detach().clone().requires_grad_(v.requires_grad))

    return Call(tree_map(c, call.args), tree_map(c, call.kwargs))


def tensors_given(call: Call) -> list[torch.Tensor]:
    """The tensors among a call's inputs (``tree_flatten`` order): after the call, what an
    in-place op left in the caller's tensors."""
    return [v for v in tree_flatten((call.args, call.kwargs))[0] if isinstance(v, torch.Tensor)]


def _with_marks(v: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``out`` given copies of torch's marks of ``v``'s dimensions."""
    for k, held in torchcompat.dimension_marks(v).items():
        setattr(out, k, copy.copy(held))
    return out


@dataclass
class Run:
    """One eager call: what it gave, whether it raised, and the state it left."""

    call: Call
    how: str  # "example", or the variation that took a path
    start: dict[str, Any] | None = None  # the state it ran from
    seed: int = 0  # and the seed
    compiled: bool = True  # also compared compiled (branchpaths.Outcome.compiled)
    out: Any = None
    grads: dict[str, torch.Tensor] = field(default_factory=dict)
    raised: str = ""  # the exception, in words, where it raised
    effects: Effects = field(default_factory=Effects)  # what it printed, logged and warned
    state: dict[str, str] = field(default_factory=dict)  # fingerprint.fingerprint after it
    # With ``keep``: the buffers and attributes it left, and its fingerprint without floating
    # values (what a compiled run is compared on, the floats within tolerance).
    buffers: dict[str, Any] = field(default_factory=dict)
    coarse: dict[str, str] = field(default_factory=dict)
    # Per output tensor: whether it asks for a gradient, and what it is a view of (an input,
    # a weight) or "new": a caller can tell ``return x`` from a copy of ``x``.
    traits: list[tuple[bool, str]] = field(default_factory=list)


def run_eager(
    t: Target,
    call: Call,
    how: str,
    grads: bool,
    state: dict[str, Any],
    *,
    may_raise: bool,
    keep: bool = False,
    seed: int = 0,
) -> Run:
    """``t`` called eagerly on ``call`` from ``state`` and seed 0. An exception propagates
    unless ``may_raise`` (an input chosen for a failing check: raising is its path). With
    ``keep``, a copy of the buffers and attributes it left (to compare a compiled run's with,
    within tolerance)."""
    modelstate.load(t.fn, state)
    torch.manual_seed(seed)
    r = Run(call, how, state, seed)
    given = clone(call)
    try:
        with observing() as r.effects:
            r.out, r.grads = forward_and_grads(uncompiled(t.fn), given, grads, t.fn)
        r.traits = _traits(r.out, given, t.fn)
    except Exception as exc:
        if not may_raise:
            raise
        r.raised = said(exc)
    r.state = fingerprint(t.fn, given)
    if keep:
        r.buffers = modelstate.save(t.fn, parameters=False)
        r.coarse = fingerprint(t.fn, given, values=False)
    return r


def again_in(t: Target, runs: list[Run], grads: bool, state: dict[str, Any]) -> list[Run]:
    """``runs`` of ``t`` made again in another grad mode, each from its own state and seed, the
    first keeping what it left: what a recompile fix's compiled calls, made as the target runs
    (verify.py's ``cgrads``), are compared with, since a forward may read the grad mode."""
    out = []
    for i, r in enumerate(runs):
        start = r.start or state
        again = run_eager(t, r.call, r.how, grads, start, may_raise=True, keep=not i, seed=r.seed)
        again.compiled = r.compiled
        out.append(again)
    return out


def said(exc: BaseException) -> str:
    """An exception as a caller tells it apart: its class (where it is defined: a module's own
    ``ValueError`` is not the built-in one) and message."""
    cls = type(exc)
    where = "" if cls.__module__ == "builtins" else f"{cls.__module__}."
    return f"{where}{cls.__qualname__}: {safe_str(exc)[:120]}"


def _traits(out: Any, given: Call, fn: Any) -> list[tuple[bool, str]]:
    owners: dict[int, str] = {}
    for i, t in enumerate(tree_flatten((given.args, given.kwargs))[0]):
        if isinstance(t, torch.Tensor):
            owners.setdefault(_storage(t), f"input {i}")
    for m in modelstate._stateful(fn).values():
        if isinstance(m, torch.nn.Module):
            for t in (*m.parameters(), *m.buffers()):
                owners.setdefault(_storage(t), "a weight or buffer")
    return [
        (t.requires_grad, owners.get(_storage(t), "new"))
        for t in tree_flatten(out)[0]
        if isinstance(t, torch.Tensor)
    ]


def _storage(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage().data_ptr() if t.numel() else -id(t)
    except (RuntimeError, NotImplementedError):  # sparse, nested: no storage of its own
        return -id(t)


def differences(fixed: Run, original: Run, *, exact: bool, grads: bool) -> list[str]:
    """What a caller could tell apart between the two runs, in words (what they printed,
    logged and warned: ``Effects.differences``, compared apart for runs that differ from
    themselves)."""
    if fixed.raised or original.raised:
        if fixed.raised == original.raised:
            return []
        if fixed.raised and original.raised:
            # An ``except ValueError`` of the caller's stops catching a RuntimeError.
            return [
                f"{fixed.how}: the rewrite raises {fixed.raised}, the original {original.raised}"
            ]
        return [
            f"{fixed.how}: the rewrite raises {fixed.raised}"
            if fixed.raised
            else f"{fixed.how}: the rewrite returns where the original raises {original.raised}"
        ]
    for i, (mine, theirs) in enumerate(zip(fixed.traits, original.traits, strict=False)):
        if mine[0] != theirs[0]:
            asks = "asks" if mine[0] else "does not ask"
            return [f"{fixed.how}: output tensor {i} {asks} for a gradient, the original's not"]
        if mine[1] != theirs[1]:
            return [
                f"{fixed.how}: output tensor {i} is {theirs[1]} itself in the original (a "
                f"caller's in-place update reaches it), {mine[1]} in the rewrite"
            ]
    rtol, atol = (0.0, 0.0) if exact else (None, None)
    diffs = compare(fixed.out, original.out, rtol=rtol, atol=atol, grad=False, label="output")
    if grads and fixed.grads.keys() != original.grads.keys():
        # A gradient where the original has none (None, not zeros: an optimizer with weight
        # decay or momentum then moves that weight) or the other way round.
        more = sorted(fixed.grads.keys() - original.grads.keys())
        less = sorted(original.grads.keys() - fixed.grads.keys())
        said = [f"gives gradients of {', '.join(more[:3])} where the original gives none"] * bool(
            more
        ) + [f"gives none of {', '.join(less[:3])} where the original does"] * bool(less)
        return [f"{fixed.how}: the rewrite {' and '.join(said)}"]
    if grads:
        diffs += compare(fixed.grads, original.grads, rtol=rtol, atol=atol, grad=True, label="grad")
    return [f"{fixed.how}: {d.where}: {d.detail}" for d in diffs]


def state_differences(fixed: Run, original: Run, noise: Callable[[Run], set[str]]) -> list[str]:
    """The state the rewrite's run left that the original's did not, leaving out what differs
    between two runs of the original itself (``noise``: a timer's reading, a timestamp)."""
    changed = fingerprints_differ(fixed.state, original.state)
    if changed:
        ignored = noise(original)
        changed = [c for c in changed if c not in ignored]
    if not changed:
        return []
    what = ", ".join("the random generator" if c == "rng" else c for c in changed[:3])
    return [f"{fixed.how}: the rewrite leaves other state in {what}"]


def without(
    buffers: dict[str, Any], names: set[str], attributes: tuple[str, ...] = ()
) -> dict[str, Any]:
    """``modelstate.save``'s form of the state without the entries that ``names`` (in
    ``fingerprint``'s words) name, nor any submodule's ``attributes``."""
    out: dict[str, Any] = {}
    for key, value in buffers.items():
        k, _, attrs = key.partition("\0")
        if attrs:
            out[key] = {
                sub: {
                    a: v
                    for a, v in fields.items()
                    if (f"{k}.{sub}:{a}" if k else f"{sub}:{a}") not in names
                    and a not in attributes
                }
                for sub, fields in value.items()
            }
        elif isinstance(value, dict):
            out[key] = {n: t for n, t in value.items() if (f"{k}.{n}" if k else n) not in names}
        else:
            out[key] = value
    return out


def cover(
    path: Path,
    edited: Path,
    source: str,
    line: int,
    pick: Callable[[types.ModuleType], Target],
    ws: Workspace,
    state: dict[str, Any],
    calls: list[Call],
    *,
    loop: bool,
    thorough: bool,
) -> branchpaths.Coverage:
    """The original, its branch at ``line`` probed, run on the example and on variations of
    it until inputs take each path (branchpaths.cover)."""
    text = probed(source, line)
    if text is None:
        return branchpaths.Coverage(detail="the branch's test could not be probed")
    with shadowed(edited, text, ws), branchpaths.probing() as probe:
        t = pick(import_shadowed(path, edited, ws))

        def run(call: Call, weights: dict[str, Any] | None, seed: int) -> None:
            modelstate.load(t.fn, weights or state)
            torch.manual_seed(seed)
            forward_and_grads(uncompiled(t.fn), clone(call), False, t.fn)

        return branchpaths.cover(run, calls, probe, state, loop=loop, thorough=thorough)


def raises_compiled(
    fixed: Target,
    original: Target,
    runs: list[Run],
    backend: Any,
    grads: bool,
    state: dict[str, Any],
) -> list[str]:
    """The compiled rewrite on the inputs on which the original raised in eager (a check that
    failed): it must raise the same exception, type and message (a caller's ``except
    ValueError`` stops catching a ``RuntimeError``), after the same prints, logs and warnings.
    Where it does not, the compiled original is asked: what torch itself changes is not the
    rewrite's doing."""
    out = []
    for r in runs:
        raised, eff = _compiled_raise(fixed, r, backend, grads, state)
        if raised != r.raised:
            theirs, _ = _compiled_raise(original, r, backend, grads, state)
            if raised != theirs:
                did = f"raises {raised}" if raised else "returns"
                out.append(
                    f"compiled, {r.how}: the rewrite {did} where the original raises {r.raised}"
                )
        else:
            out += eff.differences(r.effects, f"compiled, {r.how}")
    return out


def _compiled_raise(
    t: Target, r: Run, backend: Any, grads: bool, state: dict[str, Any]
) -> tuple[str, Effects]:
    """What the compiled ``t`` raised on ``r``'s input; where it trains, in inference too (an
    inference graph may keep what a training graph drops, or not: torch 2.8 drops an op with
    an effect and no output there)."""
    said_by_mode = []
    for mode in dict.fromkeys((grads, False)):
        torch._dynamo.reset()
        modelstate.load(t.fn, r.start or state)
        torch.manual_seed(r.seed)
        raised = ""
        given = clone(r.call)
        try:
            with observing() as eff:
                compiled = torch.compile(t.fn, backend=backend)
                forward_and_grads(compiled, given, mode, t.fn)
        except Exception as exc:
            raised = said(exc)
        finally:
            torch._dynamo.reset()
        # The state it left raising: an AOT backend writes a mutation back at the graph's end,
        # which a check raising in the middle never reaches.
        left = [k for k in fingerprints_differ(fingerprint(t.fn, given), r.state) if k != "rng"]
        if left and raised == r.raised:
            raised += f" (leaving other state in {', '.join(left[:3])})"
        said_by_mode.append(raised)
        if raised != r.raised:
            break
    return said_by_mode[-1], eff


def same_shape_fresh(call: Call) -> Call:
    """The same call with new random values of the same shapes and dtypes (and the same
    dimension marks)."""

    def fresh(v: Any) -> Any:
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            return _with_marks(v, torch.randn_like(v).requires_grad_(v.requires_grad))
        return v

    return Call(tree_map(fresh, call.args), tree_map(fresh, call.kwargs))


def numbers_put_back(mine: Call, orig: Call) -> Call | None:
    """``mine`` (a rewrite's call) with each 0-d tensor that ``orig`` passes as a Python number
    at the same place made that number again: the original called on the values the rewrite's
    call holds (fresh values drawn for a call that passes a 0-d tensor differ from those drawn
    for the original's). None where the two calls differ otherwise in form."""
    a, spec_a = tree_flatten((orig.args, orig.kwargs))
    b, spec_b = tree_flatten((mine.args, mine.kwargs))
    if spec_a != spec_b:
        return None
    leaves = [
        type(x)(y.item())
        if isinstance(x, (int, float))
        and not isinstance(x, bool)
        and isinstance(y, torch.Tensor)
        and y.dim() == 0
        else y
        for x, y in zip(a, b, strict=True)
    ]
    args, kwargs = tree_unflatten(leaves, spec_b)
    return Call(tuple(args), dict(kwargs))


def _tensor_leaves(call: Call) -> list[bool]:
    """Whether each leaf of the call's inputs (``tree_flatten`` order) is a tensor."""
    return [isinstance(v, torch.Tensor) for v in tree_flatten((call.args, call.kwargs))[0]]


def _differing_leaves(a: Call, b: Call) -> set[int]:
    """The leaves one call passes as a tensor and the other not (a number as a 0-d tensor)."""
    ta, tb = _tensor_leaves(a), _tensor_leaves(b)
    n = max(len(ta), len(tb))
    return {i for i in range(n) if (i < len(ta) and ta[i]) != (i < len(tb) and tb[i])}


def passed_differently(calls: list[Call], mine: list[Call]) -> set[str]:
    """The fingerprint's ``input i`` keys of inputs one version passes as a tensor and the
    other not (fingerprint.py names tensor inputs by their place among the call's leaves)."""
    return {f"input {i}" for a, b in zip(calls, mine, strict=True) for i in _differing_leaves(a, b)}


def series_of(
    calls: list[Call], variants_first: bool = False
) -> list[tuple[Call, dict[str, Any] | None, int]]:
    """The compiled calls later checks make: the first, again, with fresh values of the same
    shapes, then each declared variant. ``variants_first``: the declared calls first, as the
    recompile check makes them (a call before them may move a buffer that chooses a path),
    then the first again and with fresh values."""
    torch.manual_seed(0)  # the fresh values: the same for the original's calls and a rewrite's
    again = (calls[0], same_shape_fresh(calls[0]))
    order = (*calls, *again) if variants_first else (calls[0], *again, *calls[1:])
    return [(c, None, 0) for c in order]


# Other values for a number a rewrite passes as a 0-d tensor: signs, zero, fractions, large.
_OTHER_INTS = (-2, -1, 0, 1, 3, 17)
_OTHER_FLOATS = (-1.5, 0.0, 1e-3, 0.5, 3.0, 1e3)


def other_numbers(calls: list[Call], mine: list[Call]) -> list[tuple[Call, Call, str]]:
    """The example's first call with each number the rewrite passes as a 0-d tensor (by
    position or by keyword) set to other values, both ways: (the original's call, the
    rewrite's, as said)."""
    if not calls or not mine:
        return []
    a0, b0 = calls[0], mine[0]
    out: list[tuple[Call, Call, str]] = []

    def others(x: Any, y: Any) -> list[tuple[Any, torch.Tensor]]:
        number = isinstance(x, (int, float)) and not isinstance(x, bool)
        if not (number and isinstance(y, torch.Tensor) and y.dim() == 0):
            return []
        values = _OTHER_FLOATS if isinstance(x, float) else _OTHER_INTS
        return [(v, torch.tensor(v, dtype=y.dtype)) for v in values]

    for i, (x, y) in enumerate(zip(a0.args, b0.args, strict=False)):
        for v, t in others(x, y):
            a = Call(tuple(v if k == i else arg for k, arg in enumerate(a0.args)), a0.kwargs)
            b = Call(tuple(t if k == i else arg for k, arg in enumerate(b0.args)), b0.kwargs)
            out.append((a, b, f"argument {i} = {v!r}"))
    for key in [k for k in a0.kwargs if k in b0.kwargs]:
        for v, t in others(a0.kwargs[key], b0.kwargs[key]):
            a = Call(a0.args, {**a0.kwargs, key: v})
            b = Call(b0.args, {**b0.kwargs, key: t})
            out.append((a, b, f"{key}={v!r}"))
    return out


def outcome_differences(fixed: Run, original: Run, *, exact: bool, grads: bool) -> list[str]:
    """Whether both raised the same, else how their outputs differ."""
    if fixed.raised or original.raised:
        if fixed.raised == original.raised:
            return []

        def said(r: Run) -> str:
            return f"raises {r.raised}" if r.raised else "returns"

        return [f"{original.how}: the original {said(original)}, the rewrite {said(fixed)}"]
    return [f"{original.how}: {d}" for d in differences(fixed, original, exact=exact, grads=grads)]


def _asking_for_gradients(call: Call, skip: set[int] | frozenset[int] = frozenset()) -> Call | None:
    """``call`` with each floating tensor input a fresh leaf that asks for its gradient, but
    the leaves in ``skip`` (``tree_flatten`` order); None where none asks."""
    leaves, spec = tree_flatten((call.args, call.kwargs))
    found = False
    for i, v in enumerate(leaves):
        if i in skip or not isinstance(v, torch.Tensor):
            continue
        if v.is_floating_point() and not v.requires_grad:
            found = True
            leaves[i] = v.detach().clone().requires_grad_(True)
    if not found:
        return None
    args, kwargs = tree_unflatten(leaves, spec)
    return Call(args, kwargs)


def gradient_differences(
    original: Target,
    fixed: Target,
    calls: list[Call],
    mine: list[Call],
    state: dict[str, Any],
    *,
    exact: bool,
) -> tuple[list[str], int]:
    """A plain function the example calls without gradients can still be called in training:
    the example's calls again, each floating input asking for its gradient, gradients compared
    (a gradient where the original gives none, None against zeros, is a difference: an
    optimizer with weight decay then moves that weight). The differences, and the calls
    compared."""
    out: list[str] = []
    compared = 0
    for a, b in zip(calls, mine, strict=False):
        # A number the rewrite passes as a 0-d tensor was no input a gradient could reach in
        # the original: not asked for in either (the inputs both had still are).
        skip = _differing_leaves(a, b)
        a2, b2 = _asking_for_gradients(a, skip), _asking_for_gradients(b, skip)
        if a2 is None or b2 is None:
            continue
        compared += 1
        how = "inputs asking for gradients"
        out += outcome_differences(
            run_eager(fixed, b2, how, True, state, may_raise=True),
            run_eager(original, a2, how, True, state, may_raise=True),
            exact=exact,
            grads=True,
        )
    return out, compared
