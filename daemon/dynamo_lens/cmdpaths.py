"""What a command line's paths name: the project they belong to, and whether each file given
is one the tools analyse. Torch-free, engine-free: checked before any work starts."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path


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


def not_python(paths: Sequence[Path]) -> str | None:
    """Why a file given by name cannot be checked: only Python source is analysed. A file of
    another kind must not pass as checked and clean."""
    notebooks = [str(p) for p in paths if p.is_file() and p.suffix.lower() == ".ipynb"]
    if notebooks:
        return (
            f"notebooks are not analysed yet: {', '.join(notebooks)}; export one with "
            "`jupyter nbconvert --to script NOTEBOOK` and check the .py"
        )
    other = [str(p) for p in paths if p.is_file() and not _python_source(p)]
    if other:
        return f"not a Python file (.py): {', '.join(other)}"
    return None


def say_skipped(skipped: Sequence[Path]) -> None:
    if skipped:
        first = ", ".join(str(p) for p in skipped[:3]) + (", …" if len(skipped) > 3 else "")
        print(
            f"dynamo-lens: {len(skipped)} notebook(s) not analysed (notebooks are not "
            f"supported yet): {first}",
            file=sys.stderr,
        )


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
