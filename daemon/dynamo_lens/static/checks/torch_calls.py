"""Calls to torch's own functions: an explicit graph break, seeding, saving, autograd.grad,
building parameters or layers, packed sequences, and ops whose result is a Python bool or has
a data-dependent shape."""

from __future__ import annotations

from ..events import TORCH, Check, check
from ..returns import SEED_FNS
from ..syntax import short
from ..torch_api import (
    DYNAMIC_SHAPE_FNS,
    PACK_FNS,
    PARAM_LAYERS,
    TENSOR_NS,
    TORCH_DATA_BOOL,
)


def _op(c: Check) -> str | None:
    """The op's name for a public tensor op (``torch.x``, ``F.x``, ``torch.linalg.x``)."""
    ns, _, fn = c.name.rpartition(".")
    return fn if ns in TENSOR_NS and not fn.startswith("_") else None


@check("explicit-graph-break", TORCH)
def explicit_graph_break(c: Check) -> None:
    if c.name == "torch._dynamo.graph_break":
        c.hit()


@check("python-random", TORCH)
def seeding(c: Check) -> None:
    if c.name in SEED_FNS:
        c.hit("call", name=c.name)


@check("file-io", TORCH)
def save_load(c: Check) -> None:
    if c.name in ("torch.save", "torch.load"):
        c.hit("skipped", name=c.name)


@check("autograd-grad", TORCH)
def autograd_grad(c: Check) -> None:
    if c.name == "torch.autograd.grad":
        c.hit()


@check("module-construction", TORCH)
def nn_construction(c: Check) -> None:
    ns, _, fn = c.name.rpartition(".")
    if ns != "torch.nn":
        return
    if fn in ("Parameter", "Buffer"):
        c.hit("nn-created", name=fn)
    elif fn in PARAM_LAYERS:
        c.hit("nn-constructed", name=fn)


@check("rnn", TORCH)
def packed_sequence(c: Check) -> None:
    if c.name in PACK_FNS:
        c.hit("functional", name=short(c.name))


@check("data-dependent-bool-op", TORCH)
def bool_result(c: Check) -> None:
    if _op(c) in TORCH_DATA_BOOL:
        c.hit("torch-fn", name=short(c.name))


@check("dynamic-shape-op", TORCH)
def dynamic_shape(c: Check) -> None:
    fn = _op(c)
    if fn is None or c.flags.capture_dynamic_output_shape_ops:
        return
    call = c.call
    if fn in DYNAMIC_SHAPE_FNS:
        c.hit("torch-fn", name=short(c.name))
    if fn == "where" and len(call.args) == 1 and not call.keywords:
        c.hit("where")
    if fn == "repeat_interleave":
        reps = c.args[1] if len(c.args) > 1 else c.kwargs.get("repeats")
        if (len(c.args) == 1 and c.args[0].tensor and not c.kwargs) or (
            reps is not None and reps.tensor
        ):
            c.hit("repeat-interleave")


@check("one-hot-no-num-classes", TORCH)
def one_hot_without_classes(c: Check) -> None:
    call = c.call
    named = any(k.arg == "num_classes" for k in call.keywords)
    if c.name == "torch.nn.functional.one_hot" and len(call.args) < 2 and not named:
        c.hit()
