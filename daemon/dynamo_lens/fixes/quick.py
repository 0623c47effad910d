"""Edits the editor offers without running them, labelled so: a ``mark_dynamic`` where the
catalogue has no rewrite to verify (the example in another file, an argument passed by keyword)
and a ``compile_example`` skeleton for a file without one. Computed from the AST; knows nothing
of LSP. ``fix`` never applies them."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..config import is_example_name
from .rewrite import ending, source_lines


@dataclass
class Edit:
    line: int  # 1-based first line replaced (or inserted before; len(lines) + 1 appends)
    text: str
    end_line: int | None = None  # last line replaced, inclusive; None: a pure insertion


def _in_style(source: str, edit: Edit) -> Edit:
    """``edit`` with the line endings ``source`` uses (a CRLF file stays CRLF)."""
    lines = source_lines(source)
    eol = next((ending(ln) for ln in lines if ending(ln)), "\n")
    if eol != "\n":
        edit.text = edit.text.replace("\n", eol)
    return edit


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _examples(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and is_example_name(n.name)]


def mark_dynamic(source: str, arg_index: int, dim: int, example: str | None = None) -> Edit | None:
    """Mark the input dynamic where the example builds the call: before ``return (target,
    (x, ...))`` when the argument is a plain name, else around whatever the example returns
    (one call or a list of variants)."""
    tree = _parse(source)
    if tree is None:
        return None
    for fn in _examples(tree):
        if example is not None and fn.name != example:
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.Return) or node.value is None:
                continue
            indent = " " * node.col_offset
            v = node.value
            if isinstance(v, ast.Tuple) and len(v.elts) >= 2 and isinstance(v.elts[1], ast.Tuple):
                args = v.elts[1].elts
                arg = args[arg_index] if arg_index < len(args) else None
                if isinstance(arg, ast.Name):
                    return _in_style(
                        source,
                        Edit(node.lineno, f"{indent}torch._dynamo.mark_dynamic({arg.id}, {dim})\n"),
                    )
            body = ast.get_source_segment(source, v)
            if body is None:
                continue
            text = (
                f"{indent}calls = {body}\n"
                f"{indent}for call in calls if isinstance(calls, list) else [calls]:\n"
                f"{indent}    torch._dynamo.mark_dynamic(call[1][{arg_index}], {dim})\n"
                f"{indent}return calls\n"
            )
            return _in_style(
                source, Edit(node.lineno, text, end_line=node.end_lineno or node.lineno)
            )
    return None


def _first_layer_input(cls: ast.ClassDef) -> str:
    for node in ast.walk(cls):
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            first = node.args[0] if node.args else None
            size = ast.unparse(first) if first is not None else "16"
            if name == "Linear":
                return f"torch.randn(8, {size})"
            if name in ("Conv2d",):
                return f"torch.randn(8, {size}, 32, 32)"
            if name in ("Conv1d",):
                return f"torch.randn(8, {size}, 64)"
            if name == "Embedding":
                return f"torch.randint(0, {size}, (8, 32))"
    return "torch.randn(8, 16)"


def add_compile_example(source: str, class_name: str) -> Edit | None:
    """Append a ``compile_example`` skeleton for ``class_name`` when the file has none."""
    tree = _parse(source)
    if tree is None or _examples(tree):
        return None
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)
    if cls is None:
        return None
    lines = source.splitlines()
    x = _first_layer_input(cls)
    text = (
        ("\n" if lines and lines[-1].strip() else "") + "\n\ndef compile_example():\n"
        f"    model = {class_name}()\n"
        f"    x = {x}  # the shapes and dtypes your model really sees\n"
        "    return model, (x,)\n"
    )
    return _in_style(source, Edit(len(source_lines(source)) + 1, text))


def module_classes_without_example(source: str) -> list[tuple[str, int]]:
    """(class name, line) of classes that look like nn.Modules, in a file with no example."""
    tree = _parse(source)
    if tree is None or _examples(tree):
        return []
    out = []
    for n in tree.body:
        if isinstance(n, ast.ClassDef) and any("Module" in ast.unparse(b) for b in n.bases):
            out.append((n.name, n.lineno))
    return out
