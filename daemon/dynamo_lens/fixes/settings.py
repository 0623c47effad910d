"""Rules that set one of torch's documented settings after the file's imports: the escape hatch
for a library's logger call, the capture settings torch's own hint names, and dynamic shapes
from the first call (what ``torch.compile(dynamic=True)`` sets) for a recompile on a size or an
int. Torch-free."""

from __future__ import annotations

import ast
import linecache
import re

from ..findings import Finding, Kind
from .calls import LOGGER_METHODS
from .dynamic import mark_dynamic, maybe_mark_dynamic, scalar_tensor
from .registry import BREAKS, FIXABLE, RECOMPILES, At, fix
from .rewrite import Rewrite, source_lines

# The library's source line where torch broke: ``<name>.<method>(`` (a call may span lines).
_LOGGER_CALL = re.compile(r"^\s*[A-Za-z_][\w.()]*\.(\w+)\(")


@fix("ignore-logger", BREAKS, rank=120, module_wide=True)
def ignore_logger(at: At) -> Rewrite | None:
    finding, source, tree = at.finding, at.source, at.tree
    if "library" not in finding.data or not finding.stack:
        return None
    origin = finding.stack[-1]
    # torch 2.8 gives library frames no source text: read the line (reading, never writing).
    m = _LOGGER_CALL.match(origin.code or linecache.getline(origin.path, origin.line))
    if m is None or m.group(1) not in LOGGER_METHODS:
        return None
    method = f"logging.Logger.{m.group(1)}"
    return _setting_after_imports(
        "ignore-logger",
        f"Let torch drop {method} calls while compiling (ignore_logger_methods)",
        finding.path,
        source,
        tree,
        f"torch drops {method} calls while compiling, instead of breaking the graph",
        [f"torch._dynamo.config.ignore_logger_methods.add({method})"],
        needs_logging=True,
    )


# Settings torch's own hint for a break names (the registry's text, not ours): with them torch
# traces the value (an unbacked symbol) or the data-dependent shape instead of breaking.
_CAPTURE_SETTINGS = ("capture_scalar_outputs", "capture_dynamic_output_shape_ops")


@fix("capture-setting", BREAKS, rank=130, module_wide=True)
def capture_setting(at: At) -> Rewrite | None:
    finding, source, tree = at.finding, at.source, at.tree
    names = [n for n in _CAPTURE_SETTINGS if n in _said(finding)]
    why = "torch traces data-dependent values and shapes instead of breaking the graph"
    return _config_true("capture-setting", names, finding, source, tree, why)


# Any other boolean setting torch's hint names in full (``allow_unspec_int_on_nn_module`` for a
# module's int attribute it recompiles on, ``allow_rnn``): torch's words, not ours.
_NAMED_SETTING = re.compile(r"torch\._dynamo\.config\.(\w+)\s*=\s*True")


@fix("torch-setting", FIXABLE, rank=140, module_wide=True)
def torch_setting(at: At) -> Rewrite | None:
    finding, source, tree = at.finding, at.source, at.tree
    named = dict.fromkeys(_NAMED_SETTING.findall(_said(finding)))
    names = [n for n in named if n not in _CAPTURE_SETTINGS]
    what = "recompiling" if finding.kind is Kind.RECOMPILE else "breaking the graph"
    why = f"torch's own hint for {what} here names this setting"
    return _config_true("torch-setting", names, finding, source, tree, why)


# What ``torch.compile(dynamic=True)`` sets for the frames it compiles (torch's
# ``make_set_enable_dynamic``): sizes and ints are symbolic from the first compile, not after a
# recompile. The analysis compiles the target itself, so the user's own compile call is not
# where a fix can be verified; the setting after the imports is, for every compile after them.
_DYNAMIC = "torch._dynamo.config.assume_static_by_default = False"
_INT = re.compile(r"-?\d+")


@fix("dynamic-setting", RECOMPILES, rank=165, module_wide=True)
def dynamic_setting(at: At) -> Rewrite | None:
    """A recompile over the example's own calls on a size or an int (a count used as a shape:
    ``x.repeat(n, 1)``, ``torch.arange(n)``, where a 0-d tensor cannot stand in): torch compiles
    them dynamic from the first call. Not where a fix of the calls is proposed (a mark or a 0-d
    tensor changes that input only, this every compile)."""
    finding = at.finding
    if finding.data.get("source") != "variants":
        return None  # a risk found by probing alone: no call of the user's recompiled
    if any(rule(at) is not None for rule in (mark_dynamic, maybe_mark_dynamic, scalar_tensor)):
        return None  # a fix of the calls says it for that input only; this, for every compile
    kind, seen = finding.data.get("guard_kind"), finding.data.get("values") or []
    ints = bool(seen) and all(_INT.fullmatch(str(v)) for v in seen)
    if kind not in ("size", "size-range") and not (kind == "value" and ints):
        return None
    return _setting_after_imports(
        "dynamic-setting",
        f"Compile sizes and ints dynamic from the first call, as dynamic=True does: {_DYNAMIC}"
        " (process-wide: every compile after this file is imported, in any module)",
        finding.path,
        at.source,
        at.tree,
        "torch compiles sizes and ints dynamic from the first call, as "
        "torch.compile(dynamic=True) does, instead of a graph per value (process-wide: every "
        "compile after this import, in any module)",
        [_DYNAMIC],
        needs_logging=False,
    )


def _said(finding: Finding) -> str:
    return " ".join([finding.message, finding.explanation, *finding.hints])


def _config_true(
    rule: str, names: list[str], finding: Finding, source: str, tree: ast.Module, why: str
) -> Rewrite | None:
    """``torch._dynamo.config.<name> = True`` for each of ``names``, after the imports."""
    if not names:
        return None
    lines = [f"torch._dynamo.config.{n} = True" for n in names]
    return _setting_after_imports(
        rule,
        "Set " + ", ".join(lines) + " (module-wide)",
        finding.path,
        source,
        tree,
        f"{why} (module-wide: every compile after this import)",
        lines,
        needs_logging=False,
    )


def _setting_after_imports(
    rule: str,
    title: str,
    path: str,
    source: str,
    tree: ast.Module,
    why: str,
    settings: list[str],
    *,
    needs_logging: bool,
) -> Rewrite | None:
    """``settings`` (statements) inserted after the file's imports, with ``why`` above them."""
    if all(s in source for s in settings):
        return None  # already there: torch still breaks, so this is not the fix
    head = header_imports(tree)
    if not head:
        return None
    last = head[-1].end_lineno or head[-1].lineno
    line = source_lines(source)[last - 1]
    if not line.endswith("\n"):
        line += "\n"
    has_logging = any(
        isinstance(n, ast.Import) and any(a.name == "logging" and a.asname is None for a in n.names)
        for n in head
    )
    imported = ""
    if needs_logging and not has_logging:
        # The name ``logging`` may be another module's here (``from absl import logging``):
        # the standard one then comes in under a name of its own.
        taken = any(
            isinstance(n, ast.Name) and n.id == "logging" for n in ast.walk(tree)
        ) or "logging" in {a.asname or a.name for n in head for a in n.names}
        if taken:
            imported = "import logging as std_logging\n"
            settings = [st.replace("logging.Logger", "std_logging.Logger") for st in settings]
        else:
            imported = "import logging\n"
    text = line + imported + f"\n# {why}\n" + "".join(f"{st}\n" for st in settings)
    return Rewrite(rule, title, path, last, last, text, exact=True)


def header_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The module-level imports before its first function or class (a ``sys.path`` line may
    sit between them): the setting goes after the last, where torch and the library are
    imported."""
    out: list[ast.Import | ast.ImportFrom] = []
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            out.append(n)
    return out
