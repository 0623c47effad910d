"""Rules for statements that do their work on the host, not on tensors: a timer, a timestamp or
a dump to disk (torch cannot trace the call), an explicit ``torch._dynamo.graph_break()``, and a
0-d tensor used as a Python index (torch must turn it into an int). Torch-free."""

from __future__ import annotations

import ast

from .purity import pure_functions, side_effect
from .registry import BREAKS, At, fix
from .rewrite import (
    Rewrite,
    block_of,
    eager_only,
    lines_of,
    names,
    parameters,
    source_lines,
    whole_lines,
)

# Calls that observe or record on the host: they decide no tensor value, so running them only
# in eager keeps every output; compiled calls skip them, which the fix's title says.
HOST_CALLS = {
    "time.perf_counter",
    "time.perf_counter_ns",
    "time.time",
    "time.time_ns",
    "time.monotonic",
    "time.monotonic_ns",
    "time.process_time",
    "datetime.datetime.now",
    "datetime.datetime.utcnow",
    "datetime.now",
    "datetime.utcnow",
    "torch.save",
}
_HOST = frozenset(HOST_CALLS)
_BREAKS = {"torch._dynamo.graph_break"}
_SIMPLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)


def _host_call(node: ast.stmt) -> str | None:
    for c in ast.walk(node):
        if isinstance(c, ast.Call) and ast.unparse(c.func) in HOST_CALLS:
            return ast.unparse(c.func)
    return None


def _function_and_block(
    tree: ast.Module, node: ast.stmt
) -> tuple[ast.FunctionDef, list[ast.stmt]] | None:
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            block = block_of(fn, node)
            if block is not None:
                return fn, block
    return None


def _dependents(
    fn: ast.FunctionDef, block: list[ast.stmt], node: ast.stmt
) -> list[ast.stmt] | None:
    """``node`` and every statement that reads what it binds, transitively (``t0 =
    time.perf_counter()`` and ``self.ms = time.perf_counter() - t0``): all of them plain
    statements of the same block, their names bound nowhere else. None where that fails:
    guarding them would leave a read of an unbound name, or change a value something else
    reads."""
    guarded = [node]
    while True:
        bound = names(guarded, ast.Store)
        readers = [s for s in block if s not in guarded and names([s], ast.Load) & bound]
        if not readers:
            break
        guarded += readers
    if any(not isinstance(s, _SIMPLE) for s in guarded):
        return None
    bound = names(guarded, ast.Store)
    if bound & parameters(fn):
        return None
    # A store of a guarded name anywhere else, or a read of one outside the block (in a nested
    # block: the closure above only followed the block's own statements): refused.
    inside = {id(n) for s in guarded for n in ast.walk(s)}
    for s in ast.walk(fn):
        if not isinstance(s, ast.stmt) or s is fn or id(s) in inside:
            continue
        if names([s], ast.Store) & bound or (s not in block and names([s], ast.Load) & bound):
            return None
    return sorted(guarded, key=lambda s: s.lineno)


@fix("guard-host", BREAKS, rank=40, statement=True)
def guard_host_effect(at: At) -> Rewrite | None:
    """A timer, a timestamp or a dump (``HOST_CALLS``) as a plain statement, with the
    statements that read what it binds, each runs only in eager."""
    source, node, path, tree = at.source, at.stmt, at.path, at.tree
    call = _host_call(node) if isinstance(node, _SIMPLE) else None
    found = _function_and_block(tree, node) if call else None
    if call is None or found is None:
        return None
    guarded = _dependents(*found, node)
    if guarded is None or any(not whole_lines(source, s, s) for s in guarded):
        return None
    # Compiled calls skip the guarded statements: beyond the host call itself (its effect, as
    # the title says), what they compute must have no effect of its own.
    values = [s.value for s in guarded if isinstance(s, _SIMPLE) and s.value is not None]
    if side_effect(values, local_pure=pure_functions(tree), allowed=_HOST, strict=True):
        return None
    lines = source_lines(source)
    start, end = guarded[0].lineno, guarded[-1].end_lineno or guarded[-1].lineno
    text, nxt, kept = "", start, []
    for s in guarded:
        for old in range(nxt, s.lineno):  # what lies between two guarded statements
            kept.append((old, start + text.count("\n")))
            text += lines[old - 1]
        text += eager_only(source, s)
        nxt = (s.end_lineno or s.lineno) + 1
    also, it = (" and what reads it", "them") if len(guarded) > 1 else ("", "it")
    # What compiled calls then stop storing (``self.ms = ...``), as the title says.
    skips = sorted(
        {
            n.attr
            for g in guarded
            for n in ast.walk(g)
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
        }
    )
    return Rewrite(
        "guard-host",
        f"Run {call}(){also} only in eager (torch.compiler.is_compiling()): "
        f"compiled calls skip {it}",
        path,
        start,
        end,
        text,
        exact=True,
        kept=tuple(kept),
        skips=tuple(skips),
    )


@fix("drop-break", BREAKS, rank=50, statement=True)
def drop_graph_break(at: At) -> Rewrite | None:
    """``torch._dynamo.graph_break()`` computes nothing: removed, torch traces on."""
    source, node, path, tree = at.source, at.stmt, at.path, at.tree
    if not (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and ast.unparse(node.value.func) in _BREAKS
        and not node.value.args
        and whole_lines(source, node, node)
    ):
        return None
    found = _function_and_block(tree, node)
    alone = found is not None and len(found[1]) == 1
    first = lines_of(source, node)[0]
    text = first[: len(first) - len(first.lstrip())] + "pass\n" if alone else ""
    return Rewrite(
        "drop-break",
        "Remove the explicit torch._dynamo.graph_break(): it only splits the graph",
        path,
        node.lineno,
        node.end_lineno or node.lineno,
        text,
        exact=True,
    )


def _zero_d(fn: ast.FunctionDef, name: str) -> bool:
    """Whether ``name`` is bound once in ``fn``, to ``t.argmax()``/``t.argmin()`` or
    ``torch.argmax(t)``/``torch.argmin(t)`` with no dimension: a 0-d tensor."""
    stores = [
        s
        for s in ast.walk(fn)
        if isinstance(s, ast.Name) and isinstance(s.ctx, ast.Store) and s.id == name
    ]
    assigns = [
        s
        for s in ast.walk(fn)
        if isinstance(s, ast.Assign)
        and len(s.targets) == 1
        and isinstance(s.targets[0], ast.Name)
        and s.targets[0].id == name
    ]
    if len(stores) != 1 or len(assigns) != 1 or not isinstance(assigns[0].value, ast.Call):
        return False
    call = assigns[0].value
    func = call.func
    if (
        call.keywords
        or not isinstance(func, ast.Attribute)
        or func.attr not in {"argmax", "argmin"}
    ):
        return False
    if ast.unparse(func.value) == "torch":
        return len(call.args) == 1
    return not call.args


_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


@fix("tensor-index", BREAKS, rank=60, statement=True)
def tensor_index(at: At) -> Rewrite | None:
    """``x[i]`` where ``i`` is a 0-d index tensor (an argmax without a dimension): Python asks
    the tensor for an int (``__index__``), a value that leaves the graph.
    ``x.index_select(0, i.reshape(1)).squeeze(0)`` selects the same row inside it."""
    source, node, path, tree = at.source, at.stmt, at.path, at.tree
    found = _function_and_block(tree, node)
    if found is None or node.lineno != node.end_lineno or not whole_lines(source, node, node):
        return None
    fn = found[0]
    subs = [
        s
        for s in ast.walk(node)
        if isinstance(s, ast.Subscript)
        and isinstance(s.ctx, ast.Load)
        and isinstance(s.slice, ast.Name)
        and _zero_d(fn, s.slice.id)
    ]
    line = lines_of(source, node)[0]
    nested = any(t is not s and t in ast.walk(s) for s in subs for t in subs)
    if not subs or nested or not line.isascii():  # offsets are bytes: ASCII keeps them columns
        return None
    if _written_through(fn, node):
        return None  # ``x[i]`` is a view, ``index_select`` a copy: a write through it is lost
    for s in sorted(subs, key=lambda s: -s.col_offset):
        value = ast.get_source_segment(source, s.value) or ""
        if not isinstance(s.value, _ATOMS):
            value = f"({value})"
        assert isinstance(s.slice, ast.Name)
        new = f"{value}.index_select(0, {s.slice.id}.reshape(1)).squeeze(0)"
        line = line[: s.col_offset] + new + line[s.end_col_offset or 0 :]
    return Rewrite(
        "tensor-index",
        "Index with the 0-d tensor inside the graph (index_select) instead of a Python int",
        path,
        node.lineno,
        node.lineno,
        line,
        exact=True,
    )


def _written_through(fn: ast.FunctionDef, node: ast.stmt) -> bool:
    """Whether a name ``node`` binds is written through later in ``fn``: an in-place method
    (``slot.mul_(0.9)``), a store into it (``slot[0] = 1``) or an augmented assignment. The
    original's indexing gave a view of the tensor indexed, the rewrite a copy."""
    bound = names([node], ast.Store)
    for n in ast.walk(fn):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr.endswith("_")
            and not n.func.attr.endswith("__")
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id in bound
        ):
            return True
        augmented = isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
        if augmented and n.target.id in bound and n is not node:  # type: ignore[attr-defined]
            return True
        stored = isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store)
        if stored and isinstance(n.value, ast.Name) and n.value.id in bound:  # type: ignore[attr-defined]
            return True
    return False
