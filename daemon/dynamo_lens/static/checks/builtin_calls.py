"""Calls to Python's builtins: print, open, breakpoint, int()/float() of a tensor, range() over
one, str() of one, any()/all() over tensor conditions."""

from __future__ import annotations

import ast

from ..events import BUILTIN, Check, check
from ..model import K
from ..torch_api import IO_GB


@check("print-call", BUILTIN, "print")
def print_call(c: Check) -> None:
    if "print" not in c.flags.reorderable:
        c.hit()


@check("file-io", BUILTIN, "open", "input")
def file_io(c: Check) -> None:
    c.hit("call", name=c.name, gb=IO_GB[f"builtins.{c.name}"])


@check("debugger", BUILTIN, "breakpoint")
def breakpoint_call(c: Check) -> None:
    c.hit("breakpoint")


@check("tensor-to-python-scalar", BUILTIN, "int", "float", "bool", "complex")
def number_of_tensor(c: Check) -> None:
    # With capture_scalar_outputs, int()/float() stay in the graph; bool() still breaks.
    captured = c.flags.capture_scalar_outputs and c.name != "bool"
    if len(c.args) == 1 and c.args[0].tensor and not captured:
        c.hit("builtin", name=c.name)


@check("numpy-to-python", BUILTIN, "int", "float", "bool", "complex")
def number_of_ndarray(c: Check) -> None:
    if len(c.args) == 1 and c.args[0].k == K.NDARRAY:
        c.hit("builtin", name=c.name)


@check("tensor-to-string", BUILTIN, "str", "repr")
def string_of_tensor(c: Check) -> None:
    if len(c.args) == 1 and c.args[0].tensor:
        c.hit("repr" if c.name == "repr" else "str", name=c.name)


@check("tensor-to-python-scalar", BUILTIN, "range")
def range_over_tensor(c: Check) -> None:
    if any(a.tensor for a in c.args):
        c.hit("range")


@check("data-dependent-branch", BUILTIN, "any", "all")
def any_all_of_conditions(c: Check) -> None:
    # any(t.max() > 10 for t in ts): bool() of each tensor element.
    first = c.call.args[0] if c.call.args else None
    generated = isinstance(first, (ast.GeneratorExp, ast.ListComp))
    if len(c.args) == 1 and c.args[0].k == K.SEQ and generated:
        c.hit("any-all", name=c.name)
