"""Move the compile boundary: a break in host control flow around a model (a decode loop that
stops on a tensor test, a sampler that reads a value back each step) is not worth tracing
through. The function that holds the loop runs in Python instead, and torch compiles what each
step calls: ``@torch.compiler.disable(recursive=False)`` on it skips its own frame only, so the
step's frames (a submodule's ``forward``, a function of the user's) are compiled where they are
called. Torch-free: verification shows no break left where the target is compiled, equal
outputs over the same calls, and no frame that compiles again step after step.

``compile-step`` takes only a loop in the user's own code: a library's loop (``generate()``)
would be compiled frame by frame, its breaks and all, and the user's file is the only one
edited. For that, ``compile-model``: where a method (or a function) breaks inside the
library's ``generate()`` it calls on a model, it runs in Python (``@torch.compiler.disable``,
recursive: none of generate()'s frames is traced), and a ``with _CompiledSteps(model, ...)``
block around the call sets the model's forward to its class's forward compiled (with the
workspace's backend, mode and dynamic setting) while generate() runs, as a bound method, so
generate() still reads its parameters; after the block the model is as it was for every other
holder. Torch then breaks once, at the method, where it used to break inside generate();
verification allows that break and no other, and runs a prompt one token longer to show the
steps do not compile again.

Only a function nothing else of the workspace calls or holds (the file's other code, another
file that imports it): from there, compiled whole (``fullgraph``) or exported, it would now
stop the graph. Verified against every target of the file.
"""

from __future__ import annotations

import ast

from ..config import is_example_name
from .registry import BREAKS, At, fix
from .rewrite import (
    Rewrite,
    imports_torch,
    indent_step,
    lines_of,
    own_nodes,
    source_lines,
    string_interiors,
    whole_lines,
)
from .settings import header_imports

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


# A library's decoding loop, called on a model: its host control flow (stopping criteria,
# logits processors, ``.item()``) is what breaks, each step's model call is not.
_LIBRARY_LOOPS = ("generate",)
STEPS = "_CompiledSteps"
# Added once after the file's imports. The compiled function is the model class's ``forward``,
# cached by that function and the options (no model is held between blocks), and set on the
# instance only for the block: whoever else holds the model calls it as before. An instance that
# already holds a ``forward`` of its own (a hook's wrapper) is left as it is, uncompiled.
_MARK = "Added by Dynamo Lens (compile-model)."
STEPS_TEXT = f"""

class {STEPS}:
    \"\"\"Within its ``with`` block, the model's forward runs compiled: a library's loop around
    the model (``generate()``) runs in Python and each step it takes runs compiled. After the
    block the model is as it was, for every other caller. {_MARK}\"\"\"

    compiled: dict = {{}}  # (the class's forward, the options) -> its compiled function
    active: dict = {{}}  # id(model) -> [blocks open on it, the forward set, or None]
    lock = __import__("threading").Lock()

    def __init__(self, model, **options):
        self.model, self.options = model, options

    def __enter__(self):
        model = self.model
        with {STEPS}.lock:
            held = {STEPS}.active.setdefault(id(model), [0, None])
            held[0] += 1
            if held[0] > 1 or "forward" in vars(model):
                return self  # open already, or a forward of the instance's own: left as is
            forward = type(model).forward
            key = (forward, tuple(sorted(self.options.items())))
            if key not in {STEPS}.compiled:
                {STEPS}.compiled[key] = torch.compile(forward, **self.options)
            # A bound method: generate() reads the forward's parameters from it.
            held[1] = __import__("types").MethodType({STEPS}.compiled[key], model)
            model.forward = held[1]
        return self

    def __exit__(self, *exc):
        model = self.model
        with {STEPS}.lock:
            held = {STEPS}.active[id(model)]
            held[0] -= 1
            if held[0] == 0:
                del {STEPS}.active[id(model)]
                if held[1] is not None and vars(model).get("forward") is held[1]:
                    del model.forward
        return False
"""


def compile_arguments(backend: str, mode: str, dynamic: bool | None) -> str:
    """``torch.compile``'s arguments for the workspace's settings, the defaults left out: the
    model's steps are compiled as the analysis compiles the target."""
    out = [] if backend == "inductor" else [f"backend={backend!r}"]
    out += [] if mode in ("", "default") else [f"mode={mode!r}"]
    out += [] if dynamic is None else [f"dynamic={dynamic!r}"]
    return ", ".join(out)


def _loop_call(stmt: ast.stmt) -> str | None:
    """What the statement calls a library loop on, as written (``self.model`` in
    ``self.model.generate(ids)``, ``model``): a name, or an attribute of ``self``."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            held = node.func.value
            named = isinstance(held, ast.Name) or (
                isinstance(held, ast.Attribute) and ast.unparse(held.value) == "self"
            )
            if node.func.attr in _LIBRARY_LOOPS and named:
                return ast.unparse(held)
    return None


def _calls_submodules(fn: ast.FunctionDef, held: str) -> bool:
    """Whether the function calls a submodule of ``self`` other than through ``held``'s loop
    (``self.encoder(x)``, ``self.encoder.forward(x)``): kept out of the graph with it, that work
    would run uncompiled."""
    for node in own_nodes(fn):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        f = node.func
        if f.attr in _LIBRARY_LOOPS and ast.unparse(f.value) == held:
            continue
        through = ast.unparse(f.value).split(".")
        if through[0] == "self" and (len(through) == 1 or f.attr == "forward"):
            return True
    return False


@fix("compile-model", BREAKS, rank=171, statement=True, moves_boundary=True, module_wide=True)
def compile_model(at: At) -> Rewrite | None:
    f = at.finding
    if "library" not in f.data or (f.stack and not any(s.name in _LIBRARY_LOOPS for s in f.stack)):
        return None
    stmt = at.stmt
    held = _loop_call(stmt)
    fn = _enclosing(at.tree, f.line)
    simple = isinstance(stmt, (ast.Return, ast.Assign, ast.AnnAssign, ast.Expr))
    if held is None or fn is None or not simple or not whole_lines(at.source, stmt, stmt):
        return None
    owner = _owner(at.tree, fn)
    method = isinstance(owner, ast.ClassDef) and fn in owner.body
    if not (method or owner is fn) or _used_elsewhere(at.tree, owner):
        return None
    if any(any(m in ast.unparse(d) for m in _MARKED) for d in fn.decorator_list):
        return None
    if _calls_submodules(fn, held) or (STEPS in at.source and _MARK not in at.source):
        return None
    head = header_imports(at.tree)
    if not head or not imports_torch(ast.Module(body=list(head), type_ignores=[])):
        return None  # the helper needs ``torch`` where it is defined: after ``import torch``
    lines = source_lines(at.source)
    last = head[-1].end_lineno or head[-1].lineno
    first = fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno
    at_def, at_stmt = lines[first - 1], lines[stmt.lineno - 1]
    step = at_def[: len(at_def) - len(at_def.lstrip())]
    indent = at_stmt[: len(at_stmt) - len(at_stmt.lstrip())]
    inside = string_interiors(stmt)
    body = "".join(
        (indent_step(indent) + ln if ln.strip() and stmt.lineno + i not in inside else ln)
        for i, ln in enumerate(lines_of(at.source, stmt))
    )
    args = f", {at.compile_args}" if at.compile_args else ""
    top = lines[last - 1] if lines[last - 1].endswith("\n") else lines[last - 1] + "\n"
    helper = "" if _MARK in at.source else STEPS_TEXT  # one for the file, in any line ending
    text, kept = top + helper, []
    for old in range(last + 1, stmt.lineno):  # the lines between, as they were
        if old == first:
            text += f"{step}@torch.compiler.disable\n"
        kept.append((old, last + text.count("\n")))
        text += lines[old - 1]
    text += f"{indent}with {STEPS}({held}{args}):\n{body}"
    name = f"{owner.name}.{fn.name}" if method else fn.name
    title = (
        f"Compile the model's steps, not generate(): {fn.name}() runs generate() in Python "
        f"(@torch.compiler.disable) and, only while it runs, {held}'s forward runs compiled "
        f"(torch.compile({at.compile_args}), as the workspace compiles); torch then breaks "
        f"once, at {fn.name}(), and fullgraph and torch.export stop there"
    )
    return Rewrite(
        "compile-model",
        title,
        at.path,
        last,
        stmt.end_lineno or stmt.lineno,
        text,
        False,  # the steps compiled with the user's backend: within the dtype's tolerance
        kept=tuple(kept),
        boundary=name,
    )
