"""Rewrites that can remove a graph break, proposed from the break's finding and the source of
the file it sits in. Torch-free: nothing here is offered as verified; the worker runs both
versions and decides (worker/verify.py).

Each rule matches one code pattern at the break's line, whatever torch's wording:

- ``defer-output``: ``print("literal", ...)`` and ``warnings.warn("literal"[, Category])`` as
  statements become a call of ``_say_in_graph``, a custom op the rule adds after the imports:
  the same text printed or warned where the graph runs, in an inlined module too. (Not torch's
  ``reorderable_logging_functions``: a setting of the whole process, which defers every
  compiled print, shows values as they are after the graph, and drops calls in inlined frames.)
  A print of what tensors are (``print(f"h: {h.shape}")``: shape, dtype, device, ndim)
  becomes ``_print_in_graph("h: {0.shape}", [h])``: the text made from the real tensors where
  the graph runs, never from a size torch keeps symbolic while tracing.
- ``output-if``: such output (or a logger call ``defer-log`` takes) as the only statement of an
  ``if <tensor test>:`` without ``else`` becomes ``_say_if_in_graph``/``_log_if_in_graph``
  with the test as a tensor (``a in t`` as ``(t == a).any()``): said where the test holds.
  Verified over inputs that take each path.
- ``defer-log``: ``logger.warning("msg")`` (a logger the file binds at its top level, a
  literal message) becomes a call of ``_log_in_graph``, a custom op the rule adds after the
  imports: the same record, to the same logger, where the graph runs, in an inlined module too.
- ``guard-output``: a logger call as a statement (or an ``if`` that only outputs with one)
  runs only in eager, under ``if not torch.compiler.is_compiling():``. Compiled calls skip it:
  verified only where that hides nothing (a record below the logger's level), as verification
  compares what is printed, logged and warned.
- ``guard-host``: a timer, a timestamp or a dump to disk (``time.perf_counter()``,
  ``datetime.now()``, ``torch.save``) as a plain statement, with every statement that reads
  what it binds, runs only in eager. Exact in value; compiled calls skip them, as the title says.
- ``drop-break``: an explicit ``torch._dynamo.graph_break()`` is removed. Exact.
- ``tensor-index``: ``x[i]`` with ``i`` a 0-d argmax becomes ``x.index_select(0,
  i.reshape(1)).squeeze(0)``: the index stays a tensor. Exact.
- ``torch-where``: ``if <tensor condition>: x = a`` (optionally ``else: x = b``) becomes
  ``x = torch.where(<condition>, a, x or b)``, and ``if c: return a`` then ``return b``
  becomes ``return torch.where(c, a, b)``: both sides are computed and one is selected. Exact
  in value; a rebinding that changes a tensor's kind (a buffer, a parameter) can still add a
  recompile, which verification measures. In the condition, ``any``/``all`` over tensor tests
  become ``torch.stack([...]).any()``, and ``torch.equal(a, b)`` a shape test (static while
  tracing) and an element test; ``xs = [f(v) for v in xs]`` selects element by element.
- ``select-argument``: ``if <tensor condition>: f(..., a, ...)`` ``else: f(..., b, ...)``, the
  same call but for one argument (LongRoPE's ``register_buffer("inv_freq", <long or original
  table>)``), becomes one call with ``torch.where(<condition>, a, b)`` as that argument: the
  call happens once, as before, and neither table is written into. Exact in value.
- ``check-in-graph``: ``assert <tensor condition>, "msg"`` and ``if <tensor condition>: raise
  ValueError("msg")`` (a built-in exception, a literal message) become a call of ``_raise_if``,
  a custom op the rule adds after the file's imports: torch keeps it in the graph without
  tracing into it, and it raises the original exception, type and message, where the check
  fails, on the real values. Exact. (``torch._assert_async`` would raise ``RuntimeError``: a
  caller's ``except ValueError`` would stop catching it.)

- ``nonstrict-trace``: the call of a helper of the same file that ``@torch.compiler.disable``
  keeps out of the graph, where the helper only computes (no side effect non-strict tracing
  would run once), gets ``@torch._dynamo.nonstrict_trace`` instead. Exact in eager.

- ``loop-exit``: a ``for`` loop that leaves on a tensor test (``if <c>: break`` between
  ``name = value`` statements) runs every iteration, a flag keeping what it carries as the exit
  left it (``torch.where``). Exact; the iterations after the exit are computed and discarded.

- ``ignore-logger``: a break torch reports inside a library's logger call (transformers'
  ``logger.warning_once``) gets, in the user's file, the documented escape hatch after its
  imports: ``torch._dynamo.config.ignore_logger_methods.add(logging.Logger.<method>)``. Torch
  then drops those calls while compiling: verified only where they emit nothing the user would
  see (a level below the logger's). A torch without the setting fails verification, so the
  rewrite is not offered there.

- ``torch-setting``: any other ``torch._dynamo.config.<name> = True`` torch's own hint names
  for a break or a recompile (``allow_unspec_int_on_nn_module`` for a module's int attribute it
  recompiles on), set after the file's imports.

- ``mark-dynamic``: a recompile on an argument's size, in a file whose ``compile_example``
  builds the calls: its one ``return`` marks that dimension dynamic in every call it returns
  (``torch._dynamo.mark_dynamic``), by position or by keyword. Exact. Verified where torch
  compiles fewer frames for the example's calls; a dimension the code specialises makes torch
  raise, and ``maybe-mark-dynamic`` (``torch._dynamo.maybe_mark_dynamic``) is tried instead:
  one graph for the sizes the code does not single out.
- ``scalar-tensor``: a recompile on a Python number the target only adds, subtracts,
  multiplies or divides by: the example passes it as a 0-d tensor.

- ``capture-setting``: where torch's own hint for the break names ``capture_scalar_outputs``
  or ``capture_dynamic_output_shape_ops`` (``.item()``, ``.tolist()``, ``nonzero``-like ops,
  in the user's code or a library's), that setting after the file's imports. Module-wide, as
  torch offers it: ``torch._dynamo.config.patch`` as a decorator is itself a graph break
  (GB0142). Whatever the value then flows into (a Python ``if``) may break again: verification
  decides.

A break outside the workspace gets no rewrite: the user's files are the only ones edited.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from ..findings import RECOMPILE_SITE, Finding
from . import (
    boundary,
    branches,
    calls,
    checks,
    deferred,
    dynamic,
    effects,
    loops,
    settings,
    swaps,
)
from .registry import FIXABLE, RULES, At, ordered
from .rewrite import Rewrite, imports_torch, is_elif, statement_at, with_comments

__all__ = [
    "FAMILIES",
    "FIXABLE",
    "RECOMPILE_SITE",
    "Rewrite",
    "applicable",
    "claim",
    "propose",
    "with_flags",
]

# The rule families: importing them registers their rules (fixes/registry.py).
FAMILIES = (boundary, branches, calls, checks, deferred, dynamic, effects, loops, settings, swaps)


def propose(
    finding: Finding, source: str, in_workspace: bool, compile_args: str = ""
) -> list[Rewrite]:
    """The rewrites the catalogue has for ``finding`` in ``source`` (its file's text), in the
    order the rules are registered to be tried. ``compile_args``: ``torch.compile``'s
    arguments for the workspace's settings (``boundary.compile_arguments``), for a rule that
    writes a compile."""
    if finding.kind not in FIXABLE or not in_workspace:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    if not imports_torch(tree):
        return []
    at = At(finding, source, tree, statement_at(tree, finding.line), compile_args)
    # A statement rule replaces the statement's lines: an ``elif``'s would then run whatever
    # the tests before it said (a rule would have to rebuild the chain; none does).
    elif_ = is_elif(source, at.node)
    out = []
    for rule in ordered():
        if finding.kind not in rule.kinds or (rule.statement and (at.node is None or elif_)):
            continue
        rw = rule.fn(at)
        if rw is None:
            continue
        rw = dataclasses.replace(
            with_comments(source, rw),
            module_wide=rule.module_wide,
            selects=rule.selecting,
            edits_calls=rule.edits_calls,
            moves_boundary=rule.moves_boundary,
        )
        try:
            ast.parse(rw.apply(source))
        except SyntaxError:
            continue  # never offer an edit that breaks the file
        out.append(rw)
    return out


def with_flags(rw: Rewrite) -> Rewrite:
    """``rw`` with the flags its rule (or each rule of a chain, ``a+b``) is registered with:
    the registry, not whoever built the rewrite, says how it is verified."""
    rules = [RULES[c] for c in rw.rule.split("+") if c in RULES]
    if not rules:
        return rw
    return dataclasses.replace(
        rw,
        module_wide=rw.module_wide or any(r.module_wide for r in rules),
        selects=rw.selects or any(r.selecting for r in rules),
        edits_calls=rw.edits_calls or any(r.edits_calls for r in rules),
        moves_boundary=rw.moves_boundary or any(r.moves_boundary for r in rules),
    )


def claim(paths: str, inputs: int, timing: str = "") -> str:
    """What a verified rewrite was shown to be, for its title: "equivalent" where it takes no
    path away (a guard, a setting, a removed break), "equal on N inputs covering both paths"
    where it removed a branch and inputs took each path, "equal on the example only" where none
    took the other; and for a recompile's fix, its measured steady time ("steady time 0.98× the
    original's (noise ±5%)")."""
    if paths == "both":
        said = f"equal on {inputs} inputs covering both paths"
    elif paths == "example":
        said = "equal on the example only: no input found that takes the other path"
    else:
        said = "equivalent"
    return f"{said}; {timing}" if timing else said


def applicable(verdict: dict[str, Any]) -> bool:
    """Whether ``fix --apply`` and the editor's preferred action may take a verdict's rewrite:
    verified, not equal on the example only, and for every target that runs the file it edits
    (no other file imports it: ``shared``)."""
    return (
        bool(verdict.get("verified"))
        and verdict.get("paths") != "example"
        and not verdict.get("shared")
    )
