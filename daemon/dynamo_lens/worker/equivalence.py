"""Compiled vs eager: outputs (and gradients when the target trains) within dtype tolerances."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import keystr, tree_flatten, tree_flatten_with_path

from ..findings import Finding, Kind, Severity
from ..texts.locate import name_span
from . import modelstate
from .devices import place
from .usercode import Call, Target, uncompiled

# (rtol, atol) per dtype. assert_close's defaults assume the same kernels; compiled code fuses
# and reorders reductions, so float32 gets torch's inductor test tolerance.
_TOLERANCES = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-5),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.complex64: (1e-4, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}
# Gradients accumulate over the backward graph: ten times looser.
_GRAD_FACTOR = 10.0


def tolerance(
    dtype: torch.dtype, rtol: float | None, atol: float | None, grad: bool
) -> tuple[float, float]:
    base_r, base_a = _TOLERANCES.get(dtype, (0.0, 0.0))
    if grad:
        base_r, base_a = base_r * _GRAD_FACTOR, base_a * _GRAD_FACTOR
    return (rtol if rtol is not None else base_r, atol if atol is not None else base_a)


@dataclass
class Difference:
    where: str
    detail: str
    max_abs: float | None = None
    max_rel: float | None = None
    rtol: float | None = None
    atol: float | None = None
    dtype: str | None = None


def _errors(actual: torch.Tensor, expected: torch.Tensor) -> tuple[float, float]:
    a = actual.detach().to(torch.float64 if not actual.is_complex() else torch.complex128).cpu()
    e = expected.detach().to(a.dtype).cpu()
    diff = (a - e).abs()
    finite = torch.isfinite(diff)
    if not finite.any():
        return math.inf, math.inf
    max_abs = float(diff[finite].max()) if diff.numel() else 0.0
    rel = diff / e.abs().clamp_min(1e-12)
    max_rel = float(rel[finite].max()) if diff.numel() else 0.0
    return max_abs, max_rel


def compare(
    actual: Any,
    expected: Any,
    *,
    rtol: float | None,
    atol: float | None,
    grad: bool,
    label: str,
    depth: int = 0,
) -> list[Difference]:
    a_leaves, a_spec = tree_flatten_with_path(actual)
    e_leaves, e_spec = tree_flatten_with_path(expected)
    if a_spec != e_spec:
        return [Difference(label, f"structure differs: compiled {a_spec} vs eager {e_spec}")]
    diffs = []
    for (path, a), (_, e) in zip(a_leaves, e_leaves, strict=True):
        where = f"{label}{keystr(path)}"
        if isinstance(e, torch.Tensor) and isinstance(a, torch.Tensor):
            if a.shape != e.shape:
                diffs.append(Difference(where, f"shape {list(a.shape)} vs eager {list(e.shape)}"))
                continue
            if a.dtype != e.dtype:
                diffs.append(Difference(where, f"dtype {a.dtype} vs eager {e.dtype}"))
                continue
            r, t = tolerance(e.dtype, rtol, atol, grad)
            try:
                torch.testing.assert_close(a, e, rtol=r, atol=t, equal_nan=True, check_device=False)
            except AssertionError:
                max_abs, max_rel = _errors(a, e)
                diffs.append(
                    Difference(
                        where,
                        f"max abs error {max_abs:.3g} (atol {t:g}), max rel error {max_rel:.3g} "
                        f"(rtol {r:g}), {str(e.dtype).replace('torch.', '')}",
                        max_abs,
                        max_rel,
                        r,
                        t,
                        str(e.dtype).replace("torch.", ""),
                    )
                )
        elif isinstance(a, torch.Tensor) != isinstance(e, torch.Tensor):
            # A tensor where a Python value was (a loop counter that became tensor(3)): they
            # compare equal, but ``json.dumps`` or an ``int`` check tells them apart.
            ta, te = type(a).__name__, type(e).__name__
            diffs.append(Difference(where, f"a {ta} ({a!r:.40}) where it was a {te} ({e!r:.40})"))
        elif _by_identity(a, e):
            # Two objects whose class compares by identity (a transformers ``DynamicCache``)
            # are always "different": compare what they hold instead.
            if depth < _MAX_DEPTH:
                diffs += compare(
                    _fields(a),
                    _fields(e),
                    rtol=rtol,
                    atol=atol,
                    grad=grad,
                    label=where,
                    depth=depth + 1,
                )
        elif not _same_value(a, e, exact=rtol == 0 and atol == 0):
            diffs.append(Difference(where, f"{a!r:.60} vs eager {e!r:.60}"))
    return diffs


def _same_value(a: Any, e: Any, *, exact: bool) -> bool:
    """Two non-tensor leaves: of one type and equal (floats within 1e-6 unless ``exact``; NaN
    equals NaN, as ``equal_nan`` does for tensors)."""
    if isinstance(a, float) and isinstance(e, float):
        if math.isnan(a) and math.isnan(e):
            return True
        return a == e if exact else math.isclose(a, e, rel_tol=1e-6)
    if exact and type(a) is not type(e):
        return False
    return bool(a == e)


# How deep compare() looks into objects that compare by identity; below that, two objects of one
# class are taken as equal (nothing more can be said of them).
_MAX_DEPTH = 4


def _by_identity(a: Any, e: Any) -> bool:
    return (
        type(a) is type(e)
        and type(e).__eq__ is object.__eq__
        and not isinstance(e, torch.nn.Module)
        and hasattr(e, "__dict__")
    )


def _fields(v: Any) -> dict[str, Any]:
    return {k: x for k, x in vars(v).items() if not callable(x)}


def trains(fn: Any, mode: str, call: Call | None = None) -> bool:
    """Whether gradients are compared: a module with trainable parameters, or, given ``call``,
    an input that asks for its gradient."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    if call is not None and any(
        isinstance(t, torch.Tensor) and t.requires_grad
        for t in tree_flatten((call.args, call.kwargs))[0]
    ):
        return True
    return isinstance(fn, torch.nn.Module) and any(p.requires_grad for p in fn.parameters())


def _loss(out: Any) -> torch.Tensor | None:
    leaves, _ = tree_flatten_with_path(out)
    terms = [
        t.float().sum()
        for _, t in leaves
        if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()
    ]
    return torch.stack(terms).sum() if terms else None


def _grads(fn: Any, call: Call) -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
    if isinstance(fn, torch.nn.Module):
        for name, p in fn.named_parameters():
            if p.grad is not None:
                out[name] = p.grad.detach().clone()
    for name, a in _inputs(call):
        if a.grad is not None:
            out[name] = a.grad.detach().clone()
    return out


def _inputs(call: Call) -> list[tuple[str, torch.Tensor]]:
    """The call's tensor inputs by name: ``arg0`` by position, ``kwarg y`` by keyword (one
    passed by keyword gets gradients as one passed by position does)."""
    given = [(f"arg{i}", a) for i, a in enumerate(call.args)]
    given += [(f"kwarg {k}", a) for k, a in call.kwargs.items()]
    return [(n, a) for n, a in given if isinstance(a, torch.Tensor)]


def _zero(fn: Any, call: Call) -> None:
    if isinstance(fn, torch.nn.Module):
        fn.zero_grad(set_to_none=True)
    for _, a in _inputs(call):
        if a.grad is not None:
            a.grad = None


@contextlib.contextmanager
def _eager_rng() -> Iterator[None]:
    # Compiled RNG differs from eager by design; use eager's so dropout compares equal.
    import torch._inductor.config as ic

    old = ic.fallback_random
    ic.fallback_random = True
    try:
        yield
    finally:
        ic.fallback_random = old


def forward_and_grads(
    fn: Any, call: Call, grads: bool, params_of: Any = None
) -> tuple[Any, dict[str, torch.Tensor]]:
    """``fn``'s outputs on ``call`` and, when ``grads``, the gradients of the sum of its floating
    outputs (by parameter of ``params_of``, default ``fn``, and by input), left zeroed."""
    owner = fn if params_of is None else params_of
    ctx = contextlib.nullcontext() if grads else torch.no_grad()
    with _eager_rng(), ctx:
        out = fn(*call.args, **call.kwargs)
        g: dict[str, torch.Tensor] = {}
        if grads and (loss := _loss(out)) is not None:
            loss.backward()
            g = _grads(owner, call)
        _zero(owner, call)
    return out, g


def run_pair(
    fn: Any, call: Call, *, backend: Any, mode: str, dynamic: bool | None, grads: bool
) -> tuple[Any, Any, dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    torch._dynamo.reset()
    kw: dict[str, Any] = {"backend": backend, "dynamic": dynamic}
    if mode != "default" and backend == "inductor":
        kw["mode"] = mode
    compiled = torch.compile(fn, **kw)
    # The compiled run starts from the state the eager one did (a step counter, BN stats).
    state = modelstate.save(fn, parameters=not isinstance(fn, torch.nn.Module))
    torch.manual_seed(0)
    eager_out, eager_g = forward_and_grads(uncompiled(fn), call, grads, params_of=fn)
    modelstate.load(fn, state)
    torch.manual_seed(0)
    comp_out, comp_g = forward_and_grads(compiled, call, grads, params_of=fn)
    return eager_out, comp_out, eager_g, comp_g


def check(
    target: Target,
    device: str,
    *,
    name: str,
    backend: Any,
    backend_name: str,
    mode: str,
    dynamic: bool | None,
    rtol: float | None,
    atol: float | None,
    grads_mode: str,
) -> tuple[list[Finding], dict[str, Any]]:
    """Findings for ``target`` on ``device``, and a summary of what was compared."""
    fn, call = place(target.fn, target.calls[0], device)
    grads = trains(fn, grads_mode)
    eager_out, comp_out, eager_g, comp_g = run_pair(
        fn, call, backend=backend, mode=mode, dynamic=dynamic, grads=grads
    )
    diffs = compare(comp_out, eager_out, rtol=rtol, atol=atol, grad=False, label="output")
    if grads:
        diffs += compare(comp_g, eager_g, rtol=rtol, atol=atol, grad=True, label="grad")
    summary = {
        "device": device,
        "outputs": sum(1 for _ in tree_flatten_with_path(eager_out)[0]),
        "gradients": len(eager_g),
        "ok": not diffs,
        "max_abs": max((d.max_abs or 0.0 for d in diffs), default=0.0),
    }
    if not diffs:
        return [], summary
    cls_name = (
        type(target.fn).__name__
        if isinstance(target.fn, torch.nn.Module)
        else getattr(target.fn, "__name__", "")
    )
    span = name_span(target.path, target.line, cls_name)
    first = diffs[0]
    more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
    return [
        Finding(
            kind=Kind.MISMATCH,
            severity=Severity.ERROR,
            path=target.path,
            line=span.line,
            column=span.column,
            end_line=span.end_line,
            end_column=span.end_column,
            message=(
                f"Compiled ({backend_name}) and eager results differ on {device}: "
                f"{first.where}: {first.detail}{more}"
            ),
            explanation="\n".join(f"{d.where}: {d.detail}" for d in diffs[:20]),
            hints=[
                "Compilation should not change results: check for in-place mutation of inputs, "
                "global state read in forward, or numerically unstable ops; "
                "`torch._dynamo.config.repro_after` helps minify a backend bug."
            ],
            target=name,
            device=device,
            data={
                "differences": [d.__dict__ for d in diffs[:20]],
                "gradients_compared": grads,
                "backend": backend_name,
            },
        )
    ], summary
