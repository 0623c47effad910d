"""Calls into the file's own code and module objects: a compiler-disabled function, building a
module that creates parameters, calling an RNN layer."""

from __future__ import annotations

from ..events import LOCAL_CLASS, LOCAL_FUNCTION, MODULE_OBJECT, Check, check


@check("compiler-disabled-call", LOCAL_FUNCTION)
def disabled(c: Check) -> None:
    if c.extra["disabled"]:
        c.hit("call", name=c.name)


@check("module-construction", LOCAL_CLASS)
def builds_parameters(c: Check) -> None:
    if c.extra["creates_params"]:
        c.hit("class", name=c.name)


@check("rnn", MODULE_OBJECT)
def rnn_layer(c: Check) -> None:
    c.hit("module", name=c.name)
