"""Reading a ``.ipynb`` with nbformat: the cells, in order, as plain (kind, source) pairs.
Every nbformat version nbformat reads (v3's worksheets included) comes out as v4's flat list,
so a cell's position is the same one the notebook editor shows."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

# A notebook's outputs (images, a 5 MB dataframe) make it large; its code seldom is. Past
# this, reading it at all is not worth the memory: the check says it skipped it.
MAX_NOTEBOOK_BYTES = 64 << 20


class NotebookError(Exception):
    """A file that is not a notebook nbformat can read: one clear message (the finding that
    says it sits on the file: the message does not repeat its path)."""


@dataclass(frozen=True)
class Cell:
    index: int  # 1-based among all cells, markdown and raw counted
    kind: str  # code | markdown | raw
    source: str
    # The In [n] it last ran as, where the editor says (LSP executionSummary); else None.
    execution_count: int | None = None


def is_notebook(path: str | Path) -> bool:
    return str(path).lower().endswith(".ipynb")


def read_cells(path: Path) -> list[Cell]:
    """The notebook's cells. Raises NotebookError for a file that is not valid nbformat, or
    when nbformat is not installed (the ``notebook`` extra)."""
    try:
        import nbformat
    except ImportError as exc:
        raise NotebookError(
            "reading notebooks needs nbformat: pip install 'dynamo-lens[notebook]'"
        ) from exc
    try:
        size = path.stat().st_size
        if size > MAX_NOTEBOOK_BYTES:
            raise NotebookError(
                f"{size >> 20} MiB, over the {MAX_NOTEBOOK_BYTES >> 20} MiB a notebook "
                "may have to be read (clear its outputs)"
            )
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise NotebookError(f"cannot read it: {exc}") from exc
    try:
        with warnings.catch_warnings():
            # nbformat warns about ids and minor versions it mends; the mended cells are read.
            warnings.simplefilter("ignore")
            nb = nbformat.reads(text, as_version=4)
        cells = list(nb.cells)
    except Exception as exc:  # nbformat raises what its JSON and schema checks raise
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise NotebookError(f"not a valid notebook (nbformat): {first}") from exc
    out = []
    for i, c in enumerate(cells, start=1):
        source = c.get("source", "")
        if isinstance(source, list):  # mended by nbformat in general; a hand-made file may not be
            source = "".join(str(s) for s in source)
        if not isinstance(source, str):
            raise NotebookError(f"not a valid notebook: cell {i} has no text source")
        out.append(Cell(i, str(c.get("cell_type", "")), source))
    return out
