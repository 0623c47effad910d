"""Rules that set one of torch's documented settings after the file's imports: the escape hatch
for a library's logger call, and the capture settings torch's own hint names. Torch-free."""

from __future__ import annotations

import ast
import linecache
import re

from ..findings import Finding, Kind
from .calls import LOGGER_METHODS
from .rewrite import Rewrite

# The library's source line where torch broke: ``<name>.<method>(`` (a call may span lines).
_LOGGER_CALL = re.compile(r"^\s*[A-Za-z_][\w.()]*\.(\w+)\(")


def ignore_logger(finding: Finding, source: str, tree: ast.Module) -> Rewrite | None:
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


def capture_setting(finding: Finding, source: str, tree: ast.Module) -> Rewrite | None:
    said = " ".join([finding.message, finding.explanation, *finding.hints])
    names = [n for n in _CAPTURE_SETTINGS if n in said]
    if not names:
        return None
    return _setting_after_imports(
        "capture-setting",
        "Set " + ", ".join(f"torch._dynamo.config.{n} = True" for n in names) + " (module-wide)",
        finding.path,
        source,
        tree,
        "torch traces data-dependent values and shapes instead of breaking the graph "
        "(module-wide: every compile after this import)",
        [f"torch._dynamo.config.{n} = True" for n in names],
        needs_logging=False,
    )


# Any other boolean setting torch's hint names in full (``allow_unspec_int_on_nn_module`` for a
# module's int attribute it recompiles on, ``allow_rnn``): torch's words, not ours.
_NAMED_SETTING = re.compile(r"torch\._dynamo\.config\.(\w+)\s*=\s*True")


def torch_setting(finding: Finding, source: str, tree: ast.Module) -> Rewrite | None:
    said = " ".join([finding.message, finding.explanation, *finding.hints])
    names = [n for n in dict.fromkeys(_NAMED_SETTING.findall(said)) if n not in _CAPTURE_SETTINGS]
    if not names:
        return None
    what = "recompiling" if finding.kind is Kind.RECOMPILE else "breaking the graph"
    return _setting_after_imports(
        "torch-setting",
        "Set " + ", ".join(f"torch._dynamo.config.{n} = True" for n in names) + " (module-wide)",
        finding.path,
        source,
        tree,
        f"torch's own hint for {what} here names this setting "
        "(module-wide: every compile after this import)",
        [f"torch._dynamo.config.{n} = True" for n in names],
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
    head = _header_imports(tree)
    if not head:
        return None
    last = head[-1].end_lineno or head[-1].lineno
    line = source.splitlines(keepends=True)[last - 1]
    if not line.endswith("\n"):
        line += "\n"
    has_logging = any(
        isinstance(n, ast.Import) and any(a.name == "logging" and a.asname is None for a in n.names)
        for n in head
    )
    text = (
        line
        + ("import logging\n" if needs_logging and not has_logging else "")
        + f"\n# {why}\n"
        + "".join(f"{s}\n" for s in settings)
    )
    return Rewrite(rule, title, path, last, last, text, exact=True)


def _header_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
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
