"""Move the compile boundary: a break in host control flow around a model (a decode loop that
stops on a tensor test, a sampler that reads a value back each step) is not worth tracing
through. The function that holds the loop runs in Python instead, and torch compiles what each
step calls: ``@torch.compiler.disable(recursive=False)`` on it skips its own frame only, so the
step's frames (a submodule's ``forward``, a function of the user's) are compiled where they are
called. Torch-free: verification shows no break left where the target is compiled, equal
outputs over the same calls, and no frame that compiles again step after step.

``compile-step`` takes only a loop in the user's own code: a library's loop (``generate()``)
would be compiled frame by frame, its breaks and all, and the user's file is the only one
edited. For that, ``compile-model``: where a module's method breaks inside the library's
``generate()`` it calls on a model it holds, the method runs in Python
(``@torch.compiler.disable``, recursive: none of generate()'s frames is traced) and the model
is compiled where the module stores it (``self.model.compile(...)``, with the workspace's
backend, mode and dynamic setting), so each decoding step calls a compiled model. Torch then
breaks once, at the method, where it used to break inside generate(); verification allows that
break and no other, and runs a prompt one token longer to show the steps do not compile again.

Only a function nothing else of the workspace calls or holds (the file's other code, another
file that imports it): from there, compiled whole (``fullgraph``) or exported, it would now
stop the graph. Verified against every target of the file.
"""

from __future__ import annotations

import ast

from ..config import is_example_name
from .registry import BREAKS, At, fix
from .rewrite import Rewrite, own_nodes, source_lines

_DISABLE = "torch.compiler.disable(recursive=False)"
# Decorators that already keep the function out of the graph (or say how it is compiled).
_MARKED = ("disable", "nonstrict_trace", "compile", "allow_in_graph")


def _enclosing(tree: ast.Module, line: int) -> ast.FunctionDef | None:
    """The innermost function whose body holds ``line``."""
    best: ast.FunctionDef | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef) or not node.body:
            continue
        inside = node.body[0].lineno <= line <= (node.end_lineno or node.lineno)
        if inside and (best is None or node.lineno > best.lineno):
            best = node
    return best


def _steps(loop: ast.For | ast.While, tree: ast.Module) -> list[str]:
    """What the loop body calls that torch compiles as a frame of its own: a submodule or a
    method of ``self`` (``self.step(h)``), or a function this file defines."""
    local = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    out = []
    for node in ast.walk(ast.Module(body=loop.body, type_ignores=[])):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
            out.append(f"self.{f.attr}")
        elif isinstance(f, ast.Name) and f.id in local:
            out.append(f.id)
    return list(dict.fromkeys(out))


def _owner(tree: ast.Module, fn: ast.FunctionDef) -> ast.ClassDef | ast.FunctionDef:
    """The top-level definition ``fn`` belongs to: its class, or itself."""
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and (
            node.lineno <= fn.lineno <= (node.end_lineno or node.lineno)
        ):
            return node
    return fn


def _used_elsewhere(tree: ast.Module, owner: ast.ClassDef | ast.FunctionDef) -> bool:
    """Whether code of the file other than ``owner`` itself and the examples names it: a module
    that holds it as a submodule, a function that calls it. Compiled or exported from there,
    the function would now stop the graph (``fullgraph``, ``torch.export``)."""
    for node in tree.body:
        if node is owner or (isinstance(node, ast.FunctionDef) and is_example_name(node.name)):
            continue
        if any(isinstance(n, ast.Name) and n.id == owner.name for n in ast.walk(node)):
            return True
    return False


# Module-wide for verification: every target of the file runs the function it marks.
@fix("compile-step", BREAKS, rank=170, moves_boundary=True, module_wide=True)
def compile_step(at: At) -> Rewrite | None:
    f = at.finding
    if "library" in f.data:
        return None  # the loop is a library's: its frames would be compiled, breaks and all
    fn = _enclosing(at.tree, f.line)
    if fn is None or _used_elsewhere(at.tree, _owner(at.tree, fn)):
        return None
    for d in fn.decorator_list:
        if any(m in ast.unparse(d) for m in _MARKED):
            return None
    loops = [
        n
        for n in own_nodes(fn)
        if isinstance(n, (ast.For, ast.While)) and n.lineno <= f.line <= (n.end_lineno or 0)
    ]
    if not loops:
        return None
    steps = [s for loop in loops for s in _steps(loop, at.tree)]
    if not steps:
        return None  # nothing but tensor ops each step: nothing left to compile
    first = fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno
    line = source_lines(at.source)[first - 1]
    indent = line[: len(line) - len(line.lstrip())]
    title = (
        f"Compile the step, not the loop: {fn.name}() runs its loop in Python and torch "
        f"compiles what each step calls ({', '.join(steps[:2])}), with @{_DISABLE} "
        f"(fullgraph and torch.export then stop at {fn.name}())"
    )
    return Rewrite(
        "compile-step",
        title,
        at.path,
        first,
        first,
        f"{indent}@{_DISABLE}\n{line}",
        True,
        kept=((first, first + 1),),
    )


# A library's decoding loop, called on a model the module holds: its host control flow (stopping
# criteria, logits processors, ``.item()``) is what breaks, each step's model call is not.
_LIBRARY_LOOPS = ("generate",)


def compile_arguments(backend: str, mode: str, dynamic: bool | None) -> str:
    """``torch.compile``'s arguments for the workspace's settings, the defaults left out: the
    model compiled in the user's file is compiled as the analysis compiles the target."""
    out = [] if backend == "inductor" else [f"backend={backend!r}"]
    out += [] if mode in ("", "default") else [f"mode={mode!r}"]
    out += [] if dynamic is None else [f"dynamic={dynamic!r}"]
    return ", ".join(out)


def _loop_call(stmt: ast.stmt) -> str | None:
    """The attribute of ``self`` whose library loop the statement calls (``self.model`` in
    ``self.model.generate(ids)``)."""
    for node in ast.walk(stmt):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        held = node.func.value
        if (
            node.func.attr in _LIBRARY_LOOPS
            and isinstance(held, ast.Attribute)
            and isinstance(held.value, ast.Name)
            and held.value.id == "self"
        ):
            return held.attr
    return None


def _stored(init: ast.FunctionDef, attr: str) -> ast.stmt | None:
    """``self.<attr> = ...`` as a statement of ``__init__``'s own body, where nothing in it
    compiles already."""
    if any("compile" in ast.unparse(n) for n in init.body):
        return None
    for i, stmt in enumerate(init.body):
        later = init.body[i + 1 :]
        alone = stmt.lineno > init.lineno and not (
            later and later[0].lineno <= (stmt.end_lineno or stmt.lineno)
        )  # on lines of its own: the compile goes on the next one
        if (
            alone
            and isinstance(stmt, ast.Assign)
            and any(
                isinstance(t, ast.Attribute)
                and t.attr == attr
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
                for t in stmt.targets
            )
        ):
            return stmt
    return None


@fix("compile-model", BREAKS, rank=171, statement=True, moves_boundary=True, module_wide=True)
def compile_model(at: At) -> Rewrite | None:
    f = at.finding
    if "library" not in f.data or (f.stack and not any(s.name in _LIBRARY_LOOPS for s in f.stack)):
        return None
    attr = _loop_call(at.stmt)
    fn = _enclosing(at.tree, f.line)
    if attr is None or fn is None:
        return None
    cls = _owner(at.tree, fn)
    if not isinstance(cls, ast.ClassDef) or fn not in cls.body or _used_elsewhere(at.tree, cls):
        return None
    if any(any(m in ast.unparse(d) for m in _MARKED) for d in fn.decorator_list):
        return None
    inits = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    stored = _stored(inits[0], attr) if inits else None
    first = fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno
    if stored is None or (stored.end_lineno or stored.lineno) >= first:
        return None
    lines = source_lines(at.source)
    end = stored.end_lineno or stored.lineno
    at_store, at_def = lines[stored.lineno - 1], lines[first - 1]
    indent = at_store[: len(at_store) - len(at_store.lstrip())]
    if len(indent) != stored.col_offset:
        return None
    step = at_def[: len(at_def) - len(at_def.lstrip())]
    args = at.compile_args
    text = (
        f"{lines[end - 1]}{indent}self.{attr}.compile({args})\n"
        + "".join(lines[end : first - 1])
        + f"{step}@torch.compiler.disable\n{at_def}"
    )
    # The store stays where it is, what lies between moves one line down, the def two.
    kept = ((end, end), *((old, old + 1) for old in range(end + 1, first)), (first, first + 2))
    title = (
        f"Compile the model, not generate(): {cls.name}.{fn.name}() runs generate() in Python "
        f"(@torch.compiler.disable) and self.{attr}.compile({args}) compiles that model in "
        f"place, every call of it, so each decoding step runs compiled; torch then breaks "
        f"once, at {fn.name}(), and fullgraph and torch.export stop there"
    )
    return Rewrite(
        "compile-model",
        title,
        at.path,
        end,
        first,
        text,
        False,  # the model compiled with the user's backend: within the dtype's tolerance
        kept=kept,
        boundary=f"{cls.name}.{fn.name}",
    )
