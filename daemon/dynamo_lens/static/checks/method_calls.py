"""Method calls, by receiver: tensor methods (item, tolist, backward, data-dependent shapes,
metadata mutation), logger methods, and a NumPy value's way back to Python."""

from __future__ import annotations

import ast

from ..events import LOGGER_METHOD, NDARRAY_METHOD, TENSOR_METHOD, Check, check
from ..syntax import int_tensor_expr
from ..torch_api import DYNAMIC_SHAPE_FNS, LOG_METHODS


def _receiver(c: Check) -> ast.expr:
    func = c.call.func
    assert isinstance(func, ast.Attribute)
    return func.value


@check("tensor-item", TENSOR_METHOD, "item")
def item(c: Check) -> None:
    if not c.call.args and not c.flags.capture_scalar_outputs:
        c.hit()


@check("tensor-tolist", TENSOR_METHOD, "tolist")
def tolist(c: Check) -> None:
    if c.call.args:
        return
    ints = int_tensor_expr(_receiver(c))
    if not c.flags.capture_scalar_outputs or not ints:
        c.hit("int" if ints else "float")


@check("tensor-backward", TENSOR_METHOD, "backward")
def backward(c: Check) -> None:
    assert c.recv is not None
    if c.recv.tensor or isinstance(_receiver(c), ast.Name):
        c.hit()


# The rest needs a receiver known to be a tensor: on an unknown one the name alone says little.


@check("data-dependent-bool-op", TENSOR_METHOD, "equal", "allclose", "is_nonzero")
def bool_result(c: Check) -> None:
    assert c.recv is not None
    if c.recv.tensor:
        c.hit("tensor-method", name=c.name)


@check("dynamic-shape-op", TENSOR_METHOD, *sorted(DYNAMIC_SHAPE_FNS), "repeat_interleave")
def dynamic_shape(c: Check) -> None:
    assert c.recv is not None
    if not c.recv.tensor or c.flags.capture_dynamic_output_shape_ops:
        return
    if c.name in DYNAMIC_SHAPE_FNS:
        c.hit("tensor-method", name=c.name)
    elif c.args and c.args[0].tensor:  # repeat_interleave with tensor repeats
        c.hit("repeat-interleave")


@check("tensor-meta-mutation", TENSOR_METHOD, "resize_", "resize_as_", "requires_grad_")
def meta_mutation(c: Check) -> None:
    assert c.recv is not None
    if not c.recv.tensor:
        return
    if c.name == "requires_grad_":
        c.hit("requires-grad-method")
    else:
        c.hit("resize" if c.name == "resize_" else "set", name=c.name)


@check("logger-call", LOGGER_METHOD, *sorted(LOG_METHODS))
def logger_method(c: Check) -> None:
    if not any(d.endswith(f".{c.name}") for d in c.flags.reorderable):
        c.hit("logger", name=c.name)


@check("numpy-to-python", NDARRAY_METHOD, "item", "tolist")
def ndarray_to_python(c: Check) -> None:
    c.hit("tolist" if c.name == "tolist" else "method", name=c.name)
