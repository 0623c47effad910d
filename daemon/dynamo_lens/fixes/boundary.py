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
    spacing_after,
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


def _held_modules(fn: ast.FunctionDef) -> dict[str, str]:
    """Loop variables that walk a container of ``self`` (``for layer in self.layers``, ``for i,
    layer in enumerate(self.blocks)``), with the container's attribute (``layers``): each item
    is a submodule the loop calls."""
    out = {}
    for node in own_nodes(fn):
        if not isinstance(node, ast.For):
            continue
        it, target = node.iter, node.target
        if (
            isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id == "enumerate"
            and len(it.args) == 1
            and isinstance(target, ast.Tuple)
            and len(target.elts) == 2
        ):
            it, target = it.args[0], target.elts[1]
        if (
            isinstance(it, ast.Attribute)
            and ast.unparse(it.value) == "self"
            and isinstance(target, ast.Name)
        ):
            out[target.id] = it.attr
    return out


def _steps(body: list[ast.stmt], tree: ast.Module, items: dict[str, str]) -> list[str]:
    """What ``body`` calls that torch compiles as a frame of its own: a submodule or a method
    of ``self`` (``self.step(h)``), an item of a container of ``self`` a loop walks (``items``),
    or a function this file defines."""
    local = {
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef)
        # kept out of the graph already: nothing of theirs would be compiled
        and not any(any(m in ast.unparse(d) for m in _MARKED) for d in n.decorator_list)
    }
    out = []
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
            out.append(f"self.{f.attr}")
        elif isinstance(f, ast.Name) and f.id in items:
            out.append(f"each of self.{items[f.id]}")
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


# The helper compile-step adds once after the imports: each call of a module the function runs
# in Python goes through a function of the module's own.
STEP = "_compiled_step"
_STEP_MARK = "Added by Dynamo Lens (compile-step)."
STEP_TEXT = f"""


@torch.compiler.disable
def {STEP}(module, _calls=__import__("weakref").WeakKeyDictionary(), _by_kind={{}}):
    \"\"\"``module``'s call through a function torch compiles as a frame where the function
    around it runs in Python (it never compiles a forward of torch's own modules, ``nn.Linear``,
    as a frame of its own); the module's call and hooks are traced inside it. Called eagerly,
    it runs eagerly. Modules of one class and the same parameter shapes share a function (one
    graph for identical layers); others get their own (no recompile of one for another's
    shapes). Anything else is returned as it is. {_STEP_MARK}\"\"\"
    if not isinstance(module, torch.nn.Module):
        return module
    try:
        call = _calls.get(module)
    except TypeError:  # a module that cannot be hashed or weakly referenced
        return module
    if call is None:
        kind = (type(module),) + tuple(
            (name, tuple(t.shape), t.dtype, t.device)
            for name, t in [*module.named_parameters(), *module.named_buffers()]
        )
        call = _by_kind.get(kind)
        if call is None:

            def call(self, *args, **kwargs):
                return self(*args, **kwargs)

            name = f"{{type(module).__name__}}_step_{{len(_by_kind) + 1}}"
            call.__code__ = call.__code__.replace(co_name=name)
            _by_kind[kind] = call
        _calls[module] = call
    return __import__("types").MethodType(call, module)
"""


def _innermost_class(tree: ast.Module, fn: ast.FunctionDef) -> ast.ClassDef | None:
    """The class whose body defines ``fn`` (a nested class's own, not the one around it)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and fn in node.body:
            return node
    return None


# torch does not trace its recurrent modules (``torch._dynamo.config.allow_rnn`` is off): one
# called through the helper would break inside; they run as they did, in Python.
_RNNS = ("RNN", "LSTM", "GRU")


def _torchs_modules(cls: ast.ClassDef, own: set[str]) -> set[str]:
    """Attributes the class sets to a module it builds (``self.fc = nn.Linear(..)``,
    ``self.layers = nn.ModuleList(..)``) that torch compiles no frame of: not a class of the
    file's own (its ``forward`` is a frame torch compiles), not a recurrent one."""
    out = set()
    for n in ast.walk(cls):
        if not (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)):
            continue
        made = ast.unparse(n.value.func)
        if made in own or made.split(".")[-1] in _RNNS:
            continue
        for t in n.targets:
            if isinstance(t, ast.Attribute) and ast.unparse(t.value) == "self":
                out.add(t.attr)
    return out


def _module_calls(
    fn: ast.FunctionDef, cls: ast.ClassDef | None, own: set[str], held: dict[str, str]
) -> list[ast.expr]:
    """The callees of the function's own calls that are torch's modules the class builds:
    ``self.fc`` in ``self.fc(x)``, ``layer`` in ``layer(x)`` where a loop walks ``self.layers``
    (``held``: ``_held_modules``)."""
    if cls is None:
        return []
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    built = _torchs_modules(cls, own) - methods
    items = {name for name, attr in held.items() if attr in built}
    out = []
    for node in own_nodes(fn):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        mine = isinstance(f, ast.Attribute) and ast.unparse(f.value) == "self" and f.attr in built
        if mine or (isinstance(f, ast.Name) and f.id in items):
            out.append(f)
    return out


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
    if any(
        any(k in ast.unparse(d) for k in ("property", "staticmethod", "classmethod"))
        for d in fn.decorator_list
    ) or any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own_nodes(fn)):
        return None  # a descriptor the decorator would wrap; a generator torch skips whole
    loops = [
        n
        for n in own_nodes(fn)
        if isinstance(n, (ast.For, ast.While)) and n.lineno <= f.line <= (n.end_lineno or 0)
    ]
    items = _held_modules(fn)
    own = {n.name for n in ast.walk(at.tree) if isinstance(n, ast.ClassDef)}
    calls = _module_calls(fn, _innermost_class(at.tree, fn), own, items)
    if not loops:
        # Outside a loop torch compiles the function up to the break and resumes after it:
        # kept out of the graph, the function's own tensor work would run uncompiled (measured
        # 4x slower where a last line read a label from a Python table).
        return None
    steps = _steps([s for loop in loops for s in loop.body], at.tree, items)
    if not steps:
        return None  # nothing but tensor ops: nothing left to compile
    lines = source_lines(at.source)
    first = fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno
    line = lines[first - 1]
    indent = line[: len(line) - len(line.lstrip())]
    what = "its loop"
    if not calls:
        # Steps of the file's own code (a submodule class of its own, a function): torch
        # compiles their frames where the skipped function calls them.
        title = (
            f"Compile the steps, not {fn.name}(): {fn.name}() runs {what} in Python, "
            f"uncompiled, and torch compiles what it calls ({', '.join(steps[:2])}), with "
            f"@{_DISABLE}; fullgraph stops at {fn.name}() and torch.export raises there "
            "(it does not take a non-recursive disable)"
        )
        text = f"{indent}@{_DISABLE}\n{line}"
        return Rewrite(
            "compile-step", title, at.path, first, first, text, True, kept=((first, first + 1),)
        )
    return _through_helper(at, fn, first, calls, what)


def _through_helper(
    at: At, fn: ast.FunctionDef, first: int, calls: list[ast.expr], what: str
) -> Rewrite | None:
    """The function disabled and each call of a module of torch's through ``_compiled_step``,
    the helper added after the imports (once)."""
    if (STEP in at.source and _STEP_MARK not in at.source) or any(
        c.lineno != c.end_lineno for c in calls
    ):
        return None  # a helper of the user's own by that name; a callee over two lines
    head = header_imports(at.tree)
    if not head or not imports_torch(ast.Module(body=list(head), type_ignores=[])):
        return None  # the helper needs ``torch`` where it is defined: after ``import torch``
    last = head[-1].end_lineno or head[-1].lineno
    if last >= first:
        return None
    lines = source_lines(at.source)
    edits: dict[int, list[ast.expr]] = {}
    for c in calls:
        edits.setdefault(c.lineno, []).append(c)
    end = fn.end_lineno or fn.lineno
    top = lines[last - 1] if lines[last - 1].endswith("\n") else lines[last - 1] + "\n"
    helper = "" if _STEP_MARK in at.source else STEP_TEXT  # one for the file
    text, kept = top + helper + (spacing_after(lines, last, first) if helper else ""), []
    at_def = lines[first - 1]
    indent = at_def[: len(at_def) - len(at_def.lstrip())]
    for old in range(last + 1, end + 1):
        if old == first:
            text += f"{indent}@{_DISABLE}\n"
        ln = lines[old - 1]
        if old in edits:
            # The AST's columns count UTF-8 bytes: edited from the right, in bytes.
            raw = ln.encode()
            for c in sorted(edits[old], key=lambda c: -(c.col_offset or 0)):
                a, b = c.col_offset or 0, c.end_col_offset or 0
                raw = raw[:a] + f"{STEP}(".encode() + raw[a:b] + b")" + raw[b:]
            text += raw.decode()
        else:
            kept.append((old, last + text.count("\n")))
            text += ln
    named = ", ".join(dict.fromkeys(ast.unparse(c) for c in calls))
    title = (
        f"Compile the steps, not {fn.name}(): {fn.name}() runs {what} in Python, uncompiled "
        f"(@{_DISABLE}), and torch compiles each call of the modules it runs ({named}) as a "
        f"frame of its own, through {STEP}() (added after the imports; eager callers run "
        f"eagerly); fullgraph stops at {fn.name}() and torch.export raises there (it does not "
        "take a non-recursive disable)"
    )
    return Rewrite(
        "compile-step",
        title,
        at.path,
        last,
        end,
        text,
        False,  # the steps compiled with the user's backend: within the dtype's tolerance
        kept=tuple(kept),
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
    text, kept = top + helper + (spacing_after(lines, last, first) if helper else ""), []
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
