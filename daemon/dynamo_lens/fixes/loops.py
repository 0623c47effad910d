"""The rule for a ``for`` loop that leaves early on a tensor's value (``if (z_next - z).norm() <
tol: break``): torch must ask the tensor for a bool, a break inside a loop, so it runs the whole
frame eagerly. The loop instead runs all its iterations, and a flag, set once the test has held,
keeps each value the loop carries as it was at the exit (``torch.where``). The values after the
loop are the early exit's, bitwise; the iterations after it are computed and thrown away, which
the fix's title says. Torch-free."""

from __future__ import annotations

import ast

from .branches import mentions_equal, tensor_condition
from .purity import imported_modules, may_raise, pure_functions, side_effect, unsafe_gradients
from .registry import BREAKS, At, fix
from .rewrite import (
    SELECT,
    Rewrite,
    fresh_name,
    names,
    parameters,
    single_assign,
    source_lines,
    whole_lines,
)


def _scope_and_loop(tree: ast.Module, node: ast.If) -> tuple[ast.FunctionDef, ast.For] | None:
    """The function and the ``for`` loop whose body holds ``node``, the loop a statement of
    the function's own body (not nested in another loop: what runs after it is then plain)."""
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        for loop in fn.body:
            if isinstance(loop, ast.For) and node in loop.body:
                return fn, loop
    return None


@fix("loop-exit", BREAKS, rank=110, statement=True, selecting=True)
def loop_exit(at: At) -> Rewrite | None:
    source, node, path, tree = at.source, at.stmt, at.path, at.tree
    if not (
        isinstance(node, ast.If)
        and not node.orelse
        and len(node.body) == 1
        and isinstance(node.body[0], ast.Break)
    ):
        return None
    found = _scope_and_loop(tree, node)
    if found is None:
        return None
    fn, loop = found
    if loop.orelse or not whole_lines(source, loop, loop):
        return None
    i = loop.body.index(node)
    pre, post = loop.body[:i], loop.body[i + 1 :]
    assigns = [single_assign([s]) for s in pre + post]
    if not post or any(a is None for a in assigns):
        return None  # only ``name = value`` around the test: nothing else left or skipped
    carried = [single_assign([s]) for s in post]
    # Each carried value must exist before the loop, to be kept when the loop exits at once.
    before = names(fn.body[: fn.body.index(loop)], ast.Store) | parameters(fn)
    if any(c is None or c[0] not in before for c in carried):
        return None
    # What the loop computes but does not carry changes on after the exit: nothing after the
    # loop may read it.
    after = {
        n.id
        for n in ast.walk(fn)
        if isinstance(n, ast.Name)
        and isinstance(n.ctx, ast.Load)
        and n.lineno > (loop.end_lineno or 0)
    }
    counter = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    if (names(pre, ast.Store) | counter) & after:
        return None
    # The iterations after the exit now run: what they compute must have no effect but its
    # value, and no gradient that can be infinite (``0 * inf`` is NaN in the gradients the
    # exit's values pass on).
    computed = [node.test, *(a[1] for a in assigns if a is not None)]
    if (
        side_effect(computed, local_pure=pure_functions(tree), modules=imported_modules(tree))
        or may_raise(computed)
        or any(unsafe_gradients(e) for e in computed)
    ):
        return None
    # A carried value that starts as a Python number (``k = 0``) would come out a tensor.
    starts = {
        t.id: s.value
        for s in fn.body[: fn.body.index(loop)]
        if isinstance(s, ast.Assign)
        for t in s.targets
        if isinstance(t, ast.Name)
    }
    if any(c is not None and isinstance(starts.get(c[0]), ast.Constant) for c in carried):
        return None
    if mentions_equal(node.test):
        return None  # a shapes' test: later iterations would compute on other shapes
    cond = tensor_condition(source, node.test)
    values = [ast.get_source_segment(source, c[1]) for c in carried if c is not None]
    if cond is None or "\n" in cond or any(v is None or "\n" in v for v in values):
        return None
    lines = source_lines(source)
    head = "".join(lines[loop.lineno - 1 : loop.body[0].lineno - 1])
    kept = "".join(lines[loop.body[0].lineno - 1 : node.lineno - 1])
    outer = head[: len(head) - len(head.lstrip())]
    inner = lines[node.lineno - 1][
        : len(lines[node.lineno - 1]) - len(lines[node.lineno - 1].lstrip())
    ]
    kept_names = [c[0] for c in carried if c is not None]
    done = fresh_name(fn, "exited")
    text = f"{outer}{done} = torch.zeros((), dtype=torch.bool, device={kept_names[0]}.device)\n"
    text += head + kept + f"{inner}{done} = torch.logical_or({done}, {cond})\n"
    for n, v in zip(kept_names, values, strict=True):
        text += f"{inner}{n} = {SELECT}({done}, {n}, {v})\n"
    return Rewrite.selecting(
        "loop-exit",
        "Run every iteration and keep the values the early exit left (torch.where): the "
        "iterations after it are computed and discarded",
        path,
        loop.lineno,
        loop.end_lineno or loop.lineno,
        text,
        exact=True,
        branch=node.lineno,
    )
