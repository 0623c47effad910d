"""What a command line's paths name: the project they belong to, and whether each file given
is one the tools analyse; how a notebook's cells ran. Torch-free, engine-free."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from .findings import FileResult


def find_root(paths: Sequence[Path]) -> Path:
    """The nearest folder with a pyproject.toml at or above the first path."""
    # Not resolved: a link given by name belongs to the workspace it sits in, not to wherever
    # it points (a fix must never take the link's target's folder for the workspace).
    start = Path(os.path.abspath(paths[0])) if paths else Path.cwd()
    here = start if start.is_dir() else start.parent
    for cand in (here, *here.parents):
        if (cand / "pyproject.toml").is_file():
            return cand
    return here


def is_notebook(path: Path) -> bool:
    return path.suffix.lower() == ".ipynb"


def not_python(paths: Sequence[Path], notebooks: bool = False) -> str | None:
    """Why a file given by name cannot be checked: only Python source (and, where
    ``notebooks``, a notebook) is analysed. A file of another kind must not pass as checked
    and clean."""
    books = [str(p) for p in paths if p.is_file() and is_notebook(p)]
    if books and not notebooks:
        return (
            f"fixes are not offered for notebooks yet: {', '.join(books)}; `dynamo-lens check` "
            "shows a notebook's findings on its cells"
        )
    other = [str(p) for p in paths if p.is_file() and not is_notebook(p) and not _python_source(p)]
    if other:
        kinds = ".py or .ipynb" if notebooks else ".py"
        return f"not a Python file or notebook ({kinds}): {', '.join(other)}"
    return None


def say_skipped(skipped: Sequence[Path]) -> None:
    if skipped:
        first = ", ".join(str(p) for p in skipped[:3]) + (", …" if len(skipped) > 3 else "")
        print(
            f"dynamo-lens: {len(skipped)} notebook(s) left out (fixes are not offered for "
            f"notebooks yet): {first}",
            file=sys.stderr,
        )


def say_cells(result: FileResult, root: Path) -> None:
    """How a notebook's cells ran, on stderr: what did not run as written, and what did not
    run at all (the findings, on stdout, are only findings)."""
    run = result.notebook
    if run is None:
        return
    try:
        name = os.path.relpath(result.path, root)
    except ValueError:
        name = result.path
    for note in [*run.left_out, *run.notes]:
        print(f"dynamo-lens: {name}:cell {note.cell}:{note.line}: {note.what}", file=sys.stderr)


def mixed_projects(paths: Sequence[Path]) -> str | None:
    """Why ``paths`` cannot be checked as one workspace: they sit in different projects (each
    its own pyproject.toml, settings and baseline); a file outside the first project's root
    would be taken for library code and its findings dropped."""
    roots = sorted({str(find_root([p])) for p in paths})
    if len(roots) < 2:
        return None
    return (
        f"the paths are in {len(roots)} projects ({', '.join(roots[:3])}"
        f"{', ...' if len(roots) > 3 else ''}): check each project on its own, or pass --root "
        "with a folder above them all (in pre-commit: args: [--root, .])"
    )


def _python_source(path: Path) -> bool:
    """A ``.py`` file, or a script whose first line runs Python (``#!/usr/bin/env python3``):
    pre-commit's ``types: [python]`` passes those by name too."""
    if path.suffix in (".py", ".pyw"):
        return True
    if path.suffix:
        return False
    try:
        with path.open("rb") as fh:
            first = fh.readline(256)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first
