"""What the walker reports as it evaluates a function, and the rules that listen.

The walker (``walker.py``) only evaluates: what each expression's value is, which function a
call reaches. At the places Dynamo may break (a call to a builtin, a torch function or a tensor
method, ``bool()`` of a value, an index, ...) it reports an *event*; the rules registered for
that event (``checks/``) look at it and record hits. A rule function is registered under its
rule id (``rules.RULES``) and the events it listens to, keyed where the event has a name (the
builtin ``print``, the kind of a standard-library call, a tensor method's name)::

    @check("print-call", BUILTIN, "print")
    def print_call(c: Check) -> None:
        if "print" not in c.flags.reorderable:
            c.hit()
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from .model import V
from .rules import RULES
from .state import Flags

# Calls, by what is called.
BUILTIN = "builtin"  # print(...), int(x), range(t): key the builtin's name
STDLIB = "stdlib"  # a function reached through an import, not torch: key its kind (calls.py)
TORCH = "torch"  # torch.<...>(...): the rule looks at the qualified name
TENSOR_METHOD = "tensor-method"  # t.item(), t.nonzero(), ... (the receiver may be unknown)
LOGGER_METHOD = "logger-method"  # logger.info(...): key the method
NDARRAY_METHOD = "ndarray-method"  # a NumPy value's .item()/.tolist(): key the method
LOCAL_FUNCTION = "local-function"  # a call into a function of this file (``fi`` set)
LOCAL_CLASS = "local-class"  # an nn.Module class of this file constructed (``name`` set)
MODULE_OBJECT = "module-object"  # calling a module object: ``classes`` of what it may be
# Other places.
CONDITION = "condition"  # a value Python tests with bool(): if, while, and/or, x if c else y
NOT = "not"  # `not x`
CONTAINS = "contains"  # `a in b` (``value``: b)
PERCENT_FORMAT = "percent-format"  # "..." % (x,) (``args``: the formatted values)
SUBSCRIPT = "subscript"  # x[i] read (``recv``: x, ``value``: i)
ATTRIBUTE_STORE = "attribute-store"  # x.attr = v (``recv``: x, ``name``: attr)
CLASS_STATEMENT = "class-statement"  # a class statement inside the compiled code

_NONE: Mapping[str, Any] = MappingProxyType({})


# The walker's ``hit(rule_id, node, variant, *, resumable, gb, **fields)``.
HitFn = Callable[..., None]


class Check:
    """One event as the rules see it; ``hit`` records a hit of the rule being asked."""

    __slots__ = (
        "_hit",
        "args",
        "extra",
        "flags",
        "kwargs",
        "name",
        "node",
        "recv",
        "rule",
        "value",
    )

    def __init__(
        self,
        hit: HitFn,
        flags: Flags,
        node: ast.AST,
        name: str = "",  # the builtin, qualified name, method name or stdlib kind
        args: Sequence[V] = (),
        kwargs: Mapping[str, V] = _NONE,
        recv: V | None = None,  # a method's receiver, a subscript's container
        value: V | None = None,  # the tested, indexed or searched value
        extra: Mapping[str, Any] = _NONE,  # event-specific facts
    ) -> None:
        self._hit, self.flags, self.node, self.name = hit, flags, node, name
        self.args, self.kwargs, self.extra = args, kwargs, extra
        self.recv, self.value = recv, value
        self.rule = ""

    @property
    def call(self) -> ast.Call:
        assert isinstance(self.node, ast.Call)
        return self.node

    def hit(
        self,
        variant: str | None = None,
        *,
        node: ast.AST | None = None,
        resumable: bool = True,
        gb: str | None = None,
        **fields: str,
    ) -> None:
        self._hit(
            self.rule,
            node if node is not None else self.node,
            variant,
            resumable=resumable,
            gb=gb,
            **fields,
        )


RuleFn = Callable[[Check], None]
_REGISTRY: dict[tuple[str, str | None], list[tuple[str, RuleFn]]] = {}
# (event, key) -> its listeners, keyed first: built once per pair (events come per call).
_LISTENERS: dict[tuple[str, str | None], list[tuple[str, RuleFn]]] = {}


def check(rule_id: str, event: str, *keys: str) -> Callable[[RuleFn], RuleFn]:
    """Register a rule function for ``event`` (only for these keys; none: every one)."""
    if rule_id not in RULES:
        raise KeyError(f"no rule {rule_id!r} in rules.RULES")

    def register(fn: RuleFn) -> RuleFn:
        for key in keys or (None,):
            _REGISTRY.setdefault((event, key), []).append((rule_id, fn))
        _LISTENERS.clear()
        return fn

    return register


def listeners(event: str, key: str | None) -> list[tuple[str, RuleFn]]:
    """The rules for ``event`` with ``key``: those keyed by it, then those for every key."""
    found = _LISTENERS.get((event, key))
    if found is None:
        keyed = _REGISTRY.get((event, key), []) if key is not None else []
        found = _LISTENERS[(event, key)] = keyed + _REGISTRY.get((event, None), [])
    return found


def dispatch(c: Check, found: list[tuple[str, RuleFn]]) -> None:
    for rule_id, fn in found:
        c.rule = rule_id
        fn(c)


def registered() -> dict[str, list[str]]:
    """Rule id -> the events its functions listen to (for the docs and the tests)."""
    out: dict[str, list[str]] = {}
    for (event, key), fns in _REGISTRY.items():
        for rule_id, _ in fns:
            out.setdefault(rule_id, []).append(f"{event}:{key}" if key else event)
    return out
