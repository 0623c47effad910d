"""Where a value is used rather than called: tested with bool(), negated, searched with `in`,
%-formatted, indexed, its attributes set; and class statements in compiled code."""

from __future__ import annotations

from ..events import (
    ATTRIBUTE_STORE,
    CLASS_STATEMENT,
    CONDITION,
    CONTAINS,
    NOT,
    PERCENT_FORMAT,
    SUBSCRIPT,
    Check,
    check,
)
from ..model import K, V


@check("data-dependent-branch", CONDITION)
def branch_on_tensor(c: Check) -> None:
    assert c.value is not None
    if c.value.tensor:
        c.hit()


@check("data-dependent-bool-op", NOT)
def not_tensor(c: Check) -> None:
    assert c.value is not None
    if c.value.tensor:
        c.hit("not", resumable=False)


@check("tensor-to-python-scalar", CONTAINS)
def in_tensor(c: Check) -> None:
    # Tensor.__contains__ is (t == v).any().item(): a host read (GB0124).
    assert c.value is not None
    if c.value.tensor:
        c.hit("in-test", resumable=False)


@check("tensor-to-string", PERCENT_FORMAT)
def percent_format(c: Check) -> None:
    if any(v.tensor for v in c.args):
        c.hit("percent-format")


@check("dynamic-shape-op", SUBSCRIPT)
def mask_index(c: Check) -> None:
    assert c.recv is not None and c.value is not None
    if c.recv.tensor and not c.extra["store"] and any(p.k == K.BOOL for p in _parts(c)):
        c.hit("bool-mask")


@check("tensor-to-python-scalar", SUBSCRIPT)
def scalar_index(c: Check) -> None:
    recv, idx, store = c.recv, c.value, c.extra["store"]
    assert recv is not None and idx is not None
    if recv.tensor:
        parts = _parts(c)  # a boolean mask part makes it a mask index (mask_index) instead
        masked = any(p.k == K.BOOL for p in parts)
        if not store and not masked and any(p.k == K.INDEX0 for p in parts):
            c.hit("index-0d")
    elif recv.k == K.TUPLE and idx.tensor and not store:
        # A Python list indexed by a tensor reads its value.
        c.hit("seq-index")
    elif recv.k == K.SCALAR and idx.tensor:
        c.hit("seq-index")


def _parts(c: Check) -> tuple[V, ...]:
    idx = c.value
    assert idx is not None
    return idx.elts if idx.k == K.TUPLE else (idx,)


@check("tensor-meta-mutation", ATTRIBUTE_STORE, "requires_grad", "data")
def tensor_attribute_store(c: Check) -> None:
    assert c.recv is not None
    if c.recv.tensor:
        c.hit("requires-grad-attr" if c.name == "requires_grad" else "data-attr")


@check("class-definition", CLASS_STATEMENT)
def class_statement(c: Check) -> None:
    c.hit("class", name=c.name)
