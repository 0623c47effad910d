"""A notebook's code cells, in order, as one Python program, with a map from each of the
program's lines back to (cell, line in that cell).

IPython syntax never fails the analysis. With IPython installed, its own input transformer
turns line magics and shell lines into ``get_ipython()`` calls, which the program's prelude
answers with a shell that does nothing; without IPython, those lines become ``pass``. A cell
magic whose body is Python (``%%time``) runs its body; any other (``%%bash``) leaves the cell
out. A cell with a syntax error is left out, reported on its line, and the others still run.
What did not run as written is said (``Program.notes``)."""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass, field

from ..findings import CellNote
from .cells import Cell

# Cell magics whose body is the cell's Python: the analysis runs the body.
PYTHON_BODY_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "memit"})

_PRELUDE = '''\
# Written by dynamo-lens from {name}: its code cells, in order, as one program.
import sys as _dynamo_lens_sys
if {folder!r} in _dynamo_lens_sys.path:  # first, before another notebook's folder
    _dynamo_lens_sys.path.remove({folder!r})
_dynamo_lens_sys.path.insert(0, {folder!r})


class _DynamoLensShell:
    """IPython's magics and shell lines do nothing here: the analysis runs the Python."""

    def getoutput(self, *args, **kwargs):
        return []

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def get_ipython():
    return _DynamoLensShell()


try:  # a kernel's builtin
    from IPython.display import display
except ImportError:

    def display(*objs, **kwargs):
        pass

'''

_SHELL_ASSIGN = re.compile(r"^(\s*)([\w.,\s\[\]]+?)\s*=\s*[!%]")
_MAGIC_LINE = re.compile(r"^(\s*)(%|!|\?)")
_HELP_LINE = re.compile(r"^(\s*)[\w.]+\?\??\s*$")
# ``%time stmt``: the statement runs (untimed); ``%timeit``'s options (``-n 10 -r 3 -o``)
# dropped. Other magics' options take words (``%prun -s cumulative``): those do nothing here.
_TIMED_LINE = re.compile(r"^(\s*)%(time|timeit)\s+((?:-[nrp]\s*\d+\s+|-[tcqo]\s+)*)([^-\s].*)$")


@dataclass
class Program:
    text: str
    # Program line (1-based, index 0 unused) -> (cell, line in the cell); None: ours.
    where: list[tuple[int, int] | None]
    notes: list[CellNote] = field(default_factory=list)  # run, but not as written
    left_out: list[CellNote] = field(default_factory=list)  # not run at all
    syntax_errors: list[tuple[CellNote, int]] = field(default_factory=list)  # and the column
    cells: int = 0
    code_cells: int = 0

    def to_cell(self, line: int) -> tuple[int, int] | None:
        return self.where[line] if 0 < line < len(self.where) else None

    def line_of(self, cell: int, line: int) -> int | None:
        """The program's line for ``line`` of ``cell`` (the inverse of ``to_cell``)."""
        for i, w in enumerate(self.where):
            if w == (cell, line):
                return i
        return None


def _ipython_transform(source: str) -> str | None:
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its tokenizer warns about odd characters
            return str(TransformerManager().transform_cell(source))
    except Exception:  # IPython's own parsing gave up: the plain fallback takes the cell
        return None


def _plain_transform(source: str) -> str:
    """Without IPython: a magic, shell or help line does nothing (``x = !ls`` binds []), and
    so do the lines a backslash continues it onto."""
    out = []
    continued = False
    for line in source.split("\n"):
        if continued:
            out.append("")
            continued = line.endswith("\\")
            continue
        m = _SHELL_ASSIGN.match(line)
        indent = line[: len(line) - len(line.lstrip())]
        if m and not line.lstrip().startswith(("%", "!")):
            out.append(f"{m[1]}{m[2]} = []")
        elif _MAGIC_LINE.match(line) or _HELP_LINE.match(line):
            out.append(f"{indent}pass")
        else:
            out.append(line)
            continue
        continued = line.endswith("\\")
    return "\n".join(out)


def _timed(source: str) -> str:
    """``%time stmt`` and its kin as ``stmt``: the statement is what the analysis needs."""
    return "\n".join(
        f"{m[1]}{m[4]}" if (m := _TIMED_LINE.match(line)) else line for line in source.split("\n")
    )


def python_of(source: str) -> str:
    """A code cell's text as the analysis runs it (its cell magic line, if any, blank)."""
    src = source.replace("\r\n", "\n").replace("\r", "\n")
    lines = src.split("\n")
    lead = next((i for i, ln in enumerate(lines) if ln.strip()), 0)
    if lines[lead].lstrip().startswith("%%"):
        return "\n" * (lead + 1) + _transform("\n".join(lines[lead + 1 :]))
    return _transform(src)


def _transform(source: str) -> str:
    """``source`` as Python, line for line (a transform that changes the line count is not
    used: the map to the cell's lines must hold)."""
    source = _timed(source)
    done = _ipython_transform(source)
    if done is not None and done.rstrip("\n").count("\n") == source.rstrip("\n").count("\n"):
        return done.rstrip("\n")
    return _plain_transform(source.rstrip("\n"))


def _awaits(code: str) -> bool:
    """Whether ``code`` compiles once top-level ``await`` is allowed."""
    try:
        compile(code, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _futures(code: str) -> tuple[str, set[str]]:
    """The cell's leading ``from __future__`` imports, blanked (they must open the program, and
    open it they do), and the features they name."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code, set()
    lines = code.split("\n")
    names: set[str] = set()
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # a docstring may come first
    for node in body:
        if not (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            break
        names |= {a.name for a in node.names}
        for n in range(node.lineno - 1, node.end_lineno or node.lineno):
            lines[n] = ""
    return "\n".join(lines), names


def build(cells: list[Cell], name: str, folder: str) -> Program:
    """The program for a notebook called ``name`` in ``folder`` (put on sys.path, as a kernel
    started there would find the notebook's sibling modules)."""
    prelude = _PRELUDE.format(name=name, folder=folder)
    lines: list[str] = prelude.split("\n")[:-1]
    where: list[tuple[int, int] | None] = [None] * (len(lines) + 1)
    prog = Program("", where, cells=len(cells))
    futures: set[str] = set()
    for cell in cells:
        if cell.kind != "code":
            continue
        prog.code_cells += 1
        src = cell.source.replace("\r\n", "\n").replace("\r", "\n")
        if not src.strip():
            continue
        raw = src.rstrip("\n").split("\n")
        # IPython reads a cell magic on the first line that is not blank.
        lead = next(i for i, ln in enumerate(raw) if ln.strip())
        first = raw[lead].strip()
        body_from = 0
        if first.startswith("%%"):
            magic = first[2:].split(None, 1)[0] if first[2:].strip() else ""
            if magic not in PYTHON_BODY_MAGICS:
                what = f"%%{magic} is not Python: the cell was not run"
                prog.left_out.append(CellNote(cell.index, lead + 1, what))
                continue
            prog.notes.append(CellNote(cell.index, lead + 1, f"%%{magic}: its body ran, untimed"))
            body_from = lead + 1
        body = "\n".join(raw[body_from:])
        code = _transform(body)
        for n, (was, now) in enumerate(zip(raw[body_from:], code.split("\n"), strict=False)):
            if was != now:
                ran = _TIMED_LINE.match(was) is not None
                what = f"`{was.strip()[:60]}` " + (
                    "ran untimed" if ran else "is IPython syntax: it did nothing here"
                )
                prog.notes.append(CellNote(cell.index, body_from + n + 1, what))
        try:
            # compile(), not just parse: `return` or `await` at the top, `break` outside a loop
            # pass the parser and fail the whole program.
            compile(code, f"<cell {cell.index}>", "exec", dont_inherit=True)
        except SyntaxError as exc:
            line = body_from + (exc.lineno or 1)
            if _awaits(code):  # IPython runs it (autoawait); one program cannot
                what = "top-level await: IPython runs it, one program cannot: not run"
                prog.left_out.append(CellNote(cell.index, line, what))
                continue
            note = CellNote(cell.index, line, f"SyntaxError: {exc.msg}")
            prog.syntax_errors.append((note, exc.offset or 1))
            continue
        except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, deep nesting
            note = CellNote(cell.index, body_from + 1, f"{type(exc).__name__}: {exc}")
            prog.syntax_errors.append((note, 1))
            continue
        code, named = _futures(code)
        futures |= named
        for n in range(body_from):
            lines.append("")
            where.append((cell.index, n + 1))
        for n, text in enumerate(code.split("\n")):
            lines.append(text)
            where.append((cell.index, body_from + n + 1))
    if futures:
        # First, as Python wants them (after the opening comment): one line of ours.
        lines.insert(1, f"from __future__ import {', '.join(sorted(futures))}")
        where.insert(2, None)
    prog.text = "\n".join(lines) + "\n"
    return prog
