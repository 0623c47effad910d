"""Ground truth for bench_fixes.py, from torch alone (no Dynamo Lens code): an original file and
its fixed copy, each imported under a name of its own, compared.

    python harness.py ORIGINAL FIXED   ->  one JSON line on stdout

- breaks: the distinct sites ("in user code at FILE:LINE") of torch's ``graph_breaks`` log
  while ``torch._dynamo.explain`` runs each target's first call (explain's own count misses a
  break before which nothing was traced, e.g. a ``warnings.warn`` first in ``forward``);
- outputs: the fixed targets' eager outputs (and gradients of their parameters, where they have
  any) against the original's, with the original's weights and the same inputs and seed,
  bitwise (``torch.testing.assert_close(rtol=0, atol=0)``), on every declared call;
- other inputs: the same comparison on inputs and weights the example never used (its floating
  inputs scaled, negated, zeroed, redrawn; its weights made absolute or negated, with the inputs
  made absolute): outputs, gradients (of parameters and inputs) and whether a call raises must
  all be the original's (``equal_other``); a fix that is equal only on the example fails here;
- behaviour: on the example and the same other inputs, what a caller sees besides the values,
  in eager and compiled (the fixed file under ``torch.compile``, backend "eager"), against the
  original in eager: the exception raised (type and message), the log records (but torch's
  own), the warnings and the printed text (``behaviour_kept``; issue 34);
- recompiles: frames compiled more than once over the first call, the same call again and one
  with fresh values of the same shapes (``backend="eager"``; torch's compilation metrics).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import logging
import os
import random
import sys
import traceback
import warnings
from collections import Counter
from typing import Any

import numpy
import torch
import torch._dynamo
from torch.utils._pytree import tree_flatten, tree_map

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench.oracle import BreakSites, Call, example_calls, example_functions, load


def calls(mod: Any) -> list[Call]:
    """Every call the module's examples return, in the examples' order (bench/oracle.py)."""
    return [c for ex in example_functions(mod) for c in example_calls(ex())]


def clone(v: Any) -> Any:
    return tree_map(lambda t: t.detach().clone() if isinstance(t, torch.Tensor) else t, v)


def fresh(v: Any) -> Any:
    torch.manual_seed(1)  # the same fresh values for the original and the fixed file

    def one(t: Any) -> Any:
        return torch.randn_like(t) if isinstance(t, torch.Tensor) and t.is_floating_point() else t

    return tree_map(one, v)


_SITES = BreakSites()


def breaks(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    torch._dynamo.reset()
    _SITES.sites.clear()
    torch._dynamo.explain(fn)(*clone(args), **clone(kwargs))
    return len(_SITES.sites)


def _inputs(v: Any) -> Any:
    """A copy of the inputs; a floating input that asks for its gradient still does."""

    def one(t: Any) -> Any:
        if not isinstance(t, torch.Tensor):
            return t
        return t.detach().clone().requires_grad_(t.requires_grad and t.is_floating_point())

    return tree_map(one, v)


def run(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    torch.manual_seed(0)
    random.seed(0)
    numpy.random.seed(0)  # the same draws for both files (numpy_random_mask.py)
    a, k = _inputs(args), _inputs(kwargs)
    out = fn(*a, **k)
    grads: dict[str, Any] = {}
    leaves = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
    loss = sum(t.float().sum() for t in leaves if t.requires_grad and t.is_floating_point())
    if isinstance(loss, torch.Tensor):
        loss.backward()
        if isinstance(fn, torch.nn.Module):
            grads = {n: p.grad.clone() for n, p in fn.named_parameters() if p.grad is not None}
            fn.zero_grad(set_to_none=True)
        for i, t in enumerate(tree_flatten((a, k))[0]):
            if isinstance(t, torch.Tensor) and t.grad is not None:
                grads[f"input {i}"] = t.grad
    return out, grads


def _variants(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, Any, Any, Any]]:
    """(name, args, kwargs, weight transform or None): inputs and weights the example never
    used. Independent of Dynamo Lens's own choice (worker/branchpaths.py)."""

    def each(f: Any) -> tuple[Any, Any]:
        def g(t: Any) -> Any:
            if isinstance(t, torch.Tensor) and t.is_floating_point():
                return f(t.detach().clone()).requires_grad_(t.requires_grad)
            return t

        return tree_map(g, args), tree_map(g, kwargs)

    out = []
    for k in (-1.0, 0.0, 0.5, 3.0, 100.0, -100.0, 1e4):
        out.append((f"inputs x {k:g}", *each(lambda t, k=k: t * k), None))
    for seed in (100, 101, 102):
        gen = torch.Generator().manual_seed(seed)
        out.append(
            (
                f"inputs redrawn {seed}",
                *each(lambda t, g=gen: torch.randn(t.shape, generator=g, dtype=t.dtype)),
                None,
            )
        )
    absolute = each(torch.abs)
    out.append(("weights absolute", *absolute, torch.abs))
    out.append(("weights negated", *absolute, torch.neg))
    return out


def compare_other(
    fa: Any, fb: Any, args: tuple[Any, ...], kwargs: dict[str, Any], state: dict[str, Any]
) -> str:
    """The first difference between the two targets on inputs the example never used, or ""."""
    for name, a, k, weights in _variants(args, kwargs):
        got = []
        for fn in (fa, fb):
            for mname, m in modules(fn).items():
                if mname in state:
                    sd = state[mname]
                    if weights is not None:
                        sd = {n: weights(v) if v.is_floating_point() else v for n, v in sd.items()}
                    m.load_state_dict(sd)
            try:
                out, grads = run(fn, a, k)
                got.append(("ok", out, grads))
            except Exception as exc:  # the original raising there is a path too
                got.append(("raised", type(exc).__name__, None))
        (sa, oa, ga), (sb, ob, gb) = got
        if sa != sb:
            return f"{name}: the original {sa}, the fix {sb}"
        if sa == "ok":
            try:
                same(ob, oa)
                same(gb, ga)
            except AssertionError as exc:
                return f"{name}: {str(exc).splitlines()[0]}"
    return ""


@contextlib.contextmanager
def observed() -> Any:
    """What runs inside: its log records (not torch's), warnings (each time) and printed text,
    as one list of strings once it closes."""
    seen: list[str] = []
    for name in dir(logging.Logger):  # transformers' warning_once: an lru_cache
        clear = getattr(getattr(logging.Logger, name, None), "cache_clear", None)
        if callable(clear):
            clear()

    class Records(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            # By level and message: the two files' loggers are named after their modules.
            if not record.name.startswith("torch"):
                seen.append(f"log {record.levelname}: {record.getMessage()}")

    handler, printed = Records(level=0), io.StringIO()
    logging.root.addHandler(handler)
    torch_dir = os.path.realpath(os.path.dirname(torch.__file__))
    caught: list[tuple[Any, str]] = []

    @torch._dynamo.disable  # shown from a compiled call's eager part: not traced
    def shown(msg: Any) -> None:
        # Who called warnings.warn: the frame just before the warnings module's, oldest first
        # (``stacklevel=2`` in a forward names nn.Module's call, a torch file, as the place).
        stack = traceback.extract_stack()
        first = next((i for i, fr in enumerate(stack) if fr.filename == warnings.__file__), 0)
        caught.append((msg, os.path.realpath(stack[first - 1].filename) if first else ""))

    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(printed):
            warnings.simplefilter("always")
            warnings._showwarnmsg_impl = shown  # type: ignore[attr-defined]
            yield seen
    finally:
        logging.root.removeHandler(handler)
        seen += [
            f"warning {w.category.__name__}: {w.message}"
            for w, raiser in caught
            if not (
                raiser.startswith(torch_dir) and os.path.realpath(w.filename).startswith(torch_dir)
            )
        ]
        seen += [f"print {line}" for line in printed.getvalue().splitlines()]


def _behaviour(fn: Any, a: Any, k: Any) -> tuple[str, list[str]]:
    raised = ""
    with observed() as seen:
        try:
            run(fn, a, k)
        except Exception as exc:
            raised = f"{type(exc).__name__}: {exc}"[:200]
    return raised, seen


def compare_behaviour(
    fa: Any, fb: Any, args: tuple[Any, ...], kwargs: dict[str, Any], state: dict[str, Any]
) -> str:
    """The first thing a caller would see differently, eager or compiled, on the example or
    the other inputs: an exception of another type or message, a log record, a warning or a
    printed line more or less; "" where none."""
    torch._dynamo.reset()
    compiled, compiled_a = torch.compile(fb, backend="eager"), torch.compile(fa, backend="eager")
    owners = {id(compiled): fb, id(compiled_a): fa}
    for name, a, k, weights in [("example", args, kwargs, None), *_variants(args, kwargs)]:
        got = []
        for fn, how in ((fa, "eager"), (fb, "eager"), (compiled, "compiled"), (compiled_a, "")):
            owner = owners.get(id(fn), fn)
            for mname, m in modules(owner).items():
                if mname in state:
                    sd = state[mname]
                    if weights is not None:
                        sd = {n: weights(v) if v.is_floating_point() else v for n, v in sd.items()}
                    m.load_state_dict(sd)
            got.append((how, *_behaviour(fn, a, k)))
        (_, ra, sa), *fixed, (_, rc, sc) = got
        for how, rb, sb in fixed:
            if how == "compiled" and (rb, sb) == (rc, sc):
                continue  # what torch itself shows compiled (an assert's RuntimeError)
            if rb != ra:
                theirs = ra or "nothing"
                return f"{name}, {how}: the fix raises {rb or 'nothing'}, the original {theirs}"
            if sb != sa:
                return f"{name}, {how}: the fix shows {sb[:2]}, the original {sa[:2]}"
    torch._dynamo.reset()
    return ""


def recompiles(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    torch._dynamo.reset()
    torch._dynamo.utils.clear_compilation_metrics()
    compiled = torch.compile(fn, backend="eager")
    with torch.no_grad():
        for a, k in ((args, kwargs), (args, kwargs), (fresh(args), fresh(kwargs))):
            compiled(*clone(a), **clone(k))
    seen = Counter(
        (m.co_filename, m.co_firstlineno, m.co_name)
        for m in torch._dynamo.utils.get_compilation_metrics()
    )
    return sum(n - 1 for n in seen.values())


def same(actual: Any, expected: Any, depth: int = 0) -> None:
    """Bitwise equal: tensors by ``assert_close(rtol=0, atol=0)``, objects torch's pytree does
    not open (transformers' ``DynamicCache``) by their attributes, other leaves (a label
    string) by ``==``; AssertionError names the first difference."""
    a, sa = tree_flatten(actual)
    e, se = tree_flatten(expected)
    if sa != se:
        raise AssertionError(f"structure differs: {sa} vs {se}")
    for i, (x, y) in enumerate(zip(a, e, strict=True)):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            torch.testing.assert_close(x, y, rtol=0, atol=0, equal_nan=True)
        elif x is y:
            continue
        elif type(x) is type(y) and hasattr(x, "__dict__") and not callable(x) and depth < 4:
            same(dict(vars(x)), dict(vars(y)), depth + 1)
        elif x != y:
            raise AssertionError(f"leaf {i}: {x!r} vs {y!r}")


class Settings:
    """torch's compiler settings as a file's import left them: a fix may be a setting
    (``torch._dynamo.config.capture_scalar_outputs = True``,
    ``reorderable_logging_functions.add(print)``), and each file is measured in its own.
    ``save_config`` misses a set changed in place: those are copied apart."""

    def __init__(self) -> None:
        self.saved = torch._dynamo.config.save_config()
        self.sets = {
            k: set(v)
            for k, v in torch._dynamo.config.get_config_copy().items()
            if isinstance(v, set)
        }

    def __enter__(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch._dynamo.config.load_config(self.saved)
            for k, v in self.sets.items():
                setattr(torch._dynamo.config, k, set(v))

    def __exit__(self, *exc: object) -> None:
        pass


def modules(fn: Any) -> dict[str, torch.nn.Module]:
    """What a target computes with, by name: itself, or a function's module-level models (each
    file built its own at import, from wherever the RNG then stood)."""
    if isinstance(fn, torch.nn.Module):
        return {"": fn}
    found = getattr(inspect.unwrap(fn), "__globals__", {})
    return {k: v for k, v in found.items() if isinstance(v, torch.nn.Module)}


def main(original: str, fixed: str) -> dict[str, Any]:
    _SITES.listen()
    pristine = Settings()
    a = load(original, "bench_original")
    sa = Settings()
    with pristine:
        b = load(fixed, "bench_fixed")
    sb = Settings()
    with sa:
        ca = calls(a)
    with sb:
        cb = calls(b)
    res: dict[str, Any] = {"breaks_before": 0, "breaks_after": 0, "equal": True, "detail": ""}
    res["recompiles_before"] = res["recompiles_after"] = 0
    for (fa, args, kwargs), (fb, _, _) in zip(ca, cb, strict=True):
        state = {
            name: {k: v.clone() for k, v in m.state_dict().items()}
            for name, m in modules(fa).items()
        }
        with sa:
            res["breaks_before"] += breaks(fa, args, kwargs)
        with sb:
            res["breaks_after"] += breaks(fb, args, kwargs)
        for fn in (fa, fb):
            for name, m in modules(fn).items():
                if name in state:
                    m.load_state_dict(state[name])
        (oa, ga), (ob, gb) = run(fa, args, kwargs), run(fb, args, kwargs)
        try:
            same(ob, oa)
            same(gb, ga)
        except AssertionError as exc:
            res["equal"], res["detail"] = False, str(exc).splitlines()[0]
        other = compare_other(fa, fb, args, kwargs, state)
        if other and res.get("equal_other", True):
            res["equal_other"], res["detail_other"] = False, other
        res.setdefault("equal_other", True)
        with sb:
            kept = compare_behaviour(fa, fb, args, kwargs, state)
        if kept and res.get("behaviour_kept", True):
            res["behaviour_kept"], res["detail_behaviour"] = False, kept
        res.setdefault("behaviour_kept", True)
        for fn in (fa, fb):
            for name, m in modules(fn).items():
                if name in state:
                    m.load_state_dict(state[name])
        with sa:
            res["recompiles_before"] += recompiles(fa, args, kwargs)
        with sb:
            res["recompiles_after"] += recompiles(fb, args, kwargs)
    return res


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
