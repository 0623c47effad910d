"""Map stack frames to workspace source ranges. Pure Python: used by the worker and the parent.

Torch often gives only a line; the column range comes from the source's AST: the expression on
that line that best matches what the finding is about.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..findings import Frame

_RESUME_RE = re.compile(r"^torch_dynamo_resume_in_(.+?)_at_\d+$")
_LIBRARY_PARTS = ("site-packages", "dist-packages", f"{os.sep}lib{os.sep}python")
# Our own package is never user code, even in a workspace that holds its source (a checkout of
# Dynamo Lens): its frames are not the user's, and purging its modules would orphan our classes.
_OWN = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep


@functools.lru_cache(maxsize=64)
def notebook_programs(root: str) -> str:
    """Where a notebook's cells are written as one program to analyse (engine/notebook.py):
    in the user's cache, outside the workspace (never a file in the user's tree), keyed by the
    workspace as the editor's result cache is. Files there are user code all the same."""
    import hashlib

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(os.path.realpath(root).encode()).hexdigest()[:20]
    return os.path.join(os.path.realpath(base), "dynamo-lens", digest, "notebooks") + os.sep


@dataclass(frozen=True)
class Span:
    line: int
    column: int  # 1-based
    end_line: int
    end_column: int  # 1-based, exclusive


def clean_function_name(name: str) -> str:
    """Dynamo's resume functions (``torch_dynamo_resume_in_f_at_9``) are really ``f``."""
    m = _RESUME_RE.match(name)
    return m.group(1) if m else name


# Frames that are torch's calling machinery or ours, not code anyone wrote a model in: shown in
# no call chain (Dynamo inlines nn.Module.__call__; our worker calls explain()).
_PLUMBING = (
    f"torch{os.sep}_dynamo{os.sep}",
    f"torch{os.sep}_compile.py",
    f"torch{os.sep}nn{os.sep}modules{os.sep}module.py",
    f"torch{os.sep}utils{os.sep}_contextlib.py",
    # Where torch evaluates an operator while tracing (fake tensors, decompositions): a break
    # there is about the operator the user called, never about these lines.
    f"torch{os.sep}_subclasses{os.sep}",
    f"torch{os.sep}_ops.py",
    f"torch{os.sep}_prims{os.sep}",
    f"torch{os.sep}_prims_common{os.sep}",
    f"torch{os.sep}_refs{os.sep}",
    f"torch{os.sep}_decomp{os.sep}",
    f"torch{os.sep}_meta_registrations.py",
)


def is_plumbing(path: str) -> bool:
    return (
        not path
        or path.startswith("<")
        or any(p in path for p in _PLUMBING)
        or os.path.realpath(path).startswith(_OWN)
    )


def is_library_path(path: str) -> bool:
    """Whether a path, as recorded anywhere (it need not exist here), is a library's: under
    site-packages, dist-packages or a Python's own lib folder."""
    return any(p in path for p in _LIBRARY_PARTS)


def display_path(path: str) -> str:
    """A library file as users know it: ``torch/nn/modules/transformer.py``, not the venv path."""
    norm = path.replace(os.sep, "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in norm:
            return norm.rsplit(marker, 1)[1]
    m = re.search(r"/lib/python\d+(?:\.\d+)?/(.+)$", norm)
    if m:
        return m.group(1)
    return "/".join(norm.split("/")[-3:])


# A model file is kilobytes: past this, a workspace file is neither parsed nor analysed.
MAX_SOURCE_BYTES = 1_000_000
# Library modules are larger (torch's biggest are a few hundred KB); one line is all we read.
MAX_LIBRARY_BYTES = 8_000_000


def read_regular(path: str, limit: int) -> bytes | None:
    """The bytes of a regular file of at most ``limit`` bytes; None for anything else.

    Paths come from tracebacks and from traces made anywhere: a FIFO or ``/dev/stdin`` would
    block the reader for good, ``/dev/zero`` never ends, and a huge file costs its size in
    memory. So the file is opened without blocking and checked before a byte is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return None if size > limit else b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


@functools.lru_cache(maxsize=1)
def package_roots() -> tuple[str, ...]:
    """Where this interpreter's installed packages and standard library live."""
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    roots = [paths.get(k, "") for k in ("purelib", "platlib", "stdlib", "platstdlib")]
    try:
        roots += [*site.getsitepackages(), site.getusersitepackages()]
    except AttributeError:  # a virtualenv's old site.py
        pass
    real = {os.path.realpath(r) for r in roots if r}
    return tuple(sorted(r + os.sep for r in real))


def in_package(path: str) -> bool:
    """Whether ``path`` is a file of an installed package (or the standard library) here."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return False
    return real.startswith(package_roots())


def library_frame(path: str, line: int, name: str = "") -> Frame:
    """A frame outside the workspace: no AST spans (parsing a library per frame is costly), and
    its code line only from an installed package's file (never from whatever a trace names)."""
    code = _line_of(path, line, MAX_LIBRARY_BYTES) if in_package(path) else ""
    return Frame(path=path, line=line, name=clean_function_name(name), code=code.strip())


class Workspace:
    """Decides which files are the user's: under the root and not a library or venv."""

    def __init__(self, root: Path, excludes: Iterable[str] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        self.excludes = tuple(excludes)

    def contains(self, path: str | os.PathLike[str]) -> bool:
        # Memoised per process: the worker asks this for each of torch's ~2.5k modules per job.
        return _contains(str(self.root), self.excludes, str(path))

    def plumbing(self, path: str) -> bool:
        """A frame of no one's code (``<frozen …>``, torch's own wrappers), unless this
        workspace says it is the user's (a live kernel's cells, kernel/cellfindings.py)."""
        return is_plumbing(path) and not self.contains(path)

    def user_frames(self, frames: Sequence[Frame]) -> list[Frame]:
        return [f for f in frames if self.contains(f.path)]

    def frame(self, path: str, line: int, name: str = "") -> Frame:
        """A workspace frame with its expression's range; a library frame without."""
        if self.contains(path):
            return frame_at(path, line, name)
        return library_frame(path, line, name)


@functools.lru_cache(maxsize=65536)
def _contains(root: str, excludes: tuple[str, ...], path: str) -> bool:
    if not path or path.startswith("<") or any(p in path for p in _LIBRARY_PARTS):
        return False
    try:
        real = Path(os.path.realpath(path))
        if str(real).startswith(notebook_programs(root)):
            return True  # a notebook's cells, as the program the analysis runs
        rel = real.relative_to(root)
    except (ValueError, OSError):
        return False
    if any(p in str(real) for p in _LIBRARY_PARTS) or str(real).startswith(_OWN):
        return False
    return not any(part in excludes for part in rel.parts)


@functools.lru_cache(maxsize=256)
def _parse(path: str, mtime_ns: int) -> tuple[ast.AST | None, tuple[str, ...]]:
    data = read_regular(path, MAX_SOURCE_BYTES)
    if data is None:
        return None, ()
    text = data.decode("utf-8", errors="replace")
    lines = tuple(text.splitlines())
    try:
        return ast.parse(text, filename=path), lines
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, lines


@functools.lru_cache(maxsize=64)
def _lines(path: str, mtime_ns: int, size: int, limit: int) -> tuple[str, ...]:
    data = read_regular(path, limit)
    return tuple(data.decode("utf-8", errors="replace").splitlines()) if data else ()


def _line_of(path: str, line: int, limit: int) -> str:
    """Line ``line`` of a regular file of at most ``limit`` bytes, else ""."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return ""
    if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
        return ""
    lines = _lines(os.path.realpath(path), st.st_mtime_ns, st.st_size, limit)
    return lines[line - 1] if 0 < line <= len(lines) else ""


def parse_file(path: str) -> tuple[ast.AST | None, tuple[str, ...]]:
    try:
        mtime = os.stat(path).st_mtime_ns
    except (OSError, ValueError):
        return None, ()
    return _parse(os.path.realpath(path), mtime)


def source_line(path: str, line: int) -> str:
    """Line ``line`` of ``path`` (a regular file under the library size limit), else ""."""
    return _line_of(path, line, MAX_LIBRARY_BYTES)


def _span(node: ast.AST) -> Span:
    line = getattr(node, "lineno", 1)
    end_line = getattr(node, "end_lineno", None) or line
    col = getattr(node, "col_offset", 0)
    end_col = getattr(node, "end_col_offset", None)
    if end_col is None:
        end_col = col + 1
    return Span(line, col + 1, end_line, end_col + 1)


def _line_span(lines: Sequence[str], line: int) -> Span:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    stripped = text.split("#", 1)[0].rstrip() if "#" in text else text.rstrip()
    start = len(text) - len(text.lstrip())
    end = max(len(stripped), start + 1)
    return Span(line, start + 1, line, end + 1)


def _statement_focus(stmt: ast.stmt) -> ast.AST:
    """The part of a statement a squiggle should cover: the test, the iterable, the value."""
    if isinstance(stmt, (ast.If, ast.While)):
        return stmt.test
    if isinstance(stmt, ast.Assert):
        return stmt.test
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return stmt.iter
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
        return stmt.value
    if isinstance(stmt, (ast.Return, ast.Expr)) and stmt.value is not None:
        return stmt.value
    if isinstance(stmt, (ast.With, ast.AsyncWith)) and stmt.items:
        return stmt.items[0].context_expr
    return stmt


_HEADER_STMTS = (
    ast.If,
    ast.While,
    ast.For,
    ast.AsyncFor,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
)


def _innermost_statement(tree: ast.AST, line: int) -> ast.stmt | None:
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        start = node.lineno
        end = node.end_lineno or start
        if isinstance(node, _HEADER_STMTS):
            # A compound statement "is on" a line only through its header.
            body = getattr(node, "body", None)
            end = body[0].lineno - 1 if body else end
            end = max(end, start)
        if start <= line <= end and (best is None or start >= best.lineno):
            best = node
    return best


def expression_span(path: str, line: int, hint: str | None = None) -> Span:
    """The range on ``line`` to underline.

    ``hint`` names what the finding is about (an attribute such as ``item``, a callee such as
    ``print``); the smallest matching call or attribute on the line wins. Otherwise the focus
    of the innermost statement on the line, else the line's text without indentation.
    """
    tree, lines = parse_file(path)
    if tree is None:
        return _line_span(lines, line)
    if hint:
        matches: list[ast.AST] = []
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) != line:
                continue
            if isinstance(node, ast.Call):
                fn = node.func
                name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)
                if name == hint:
                    matches.append(node)
            elif isinstance(node, ast.Name) and node.id == hint:
                matches.append(node)
        if matches:
            return _span(min(matches, key=lambda n: _width(_span(n))))
    stmt = _innermost_statement(tree, line)
    if stmt is None:
        return _line_span(lines, line)
    span = _span(_statement_focus(stmt))
    if span.line != line:
        return _line_span(lines, line)
    return span


def _width(s: Span) -> int:
    return (s.end_line - s.line) * 10_000 + (s.end_column - s.column)


def parameter_span(path: str, def_line: int, param: str | None) -> Span:
    """The range of ``param`` in the signature of the function defined at ``def_line``."""
    tree, lines = parse_file(path)
    if tree is not None:
        for node in ast.walk(tree):
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.lineno == def_line
            ):
                if param:
                    a = node.args
                    for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
                        if arg is not None and arg.arg == param:
                            return _span(arg)
                return name_span(path, def_line, node.name)
    return _line_span(lines, def_line)


def name_span(path: str, line: int, name: str) -> Span:
    """The range of the identifier ``name`` on ``line`` (a def/class name), else the line."""
    text = source_line(path, line)
    m = re.search(rf"\b{re.escape(name)}\b", text)
    if m:
        return Span(line, m.start() + 1, line, m.end() + 1)
    _, lines = parse_file(path)
    return _line_span(lines, line)


def definition_line(path: str, qualname: str) -> int | None:
    """Line of ``def``/``class`` for a dotted qualified name in ``path``."""
    tree, _ = parse_file(path)
    if tree is None:
        return None
    parts = qualname.split(".")
    body: list[ast.stmt] = list(getattr(tree, "body", []))
    node: ast.AST | None = None
    for part in parts:
        node = next(
            (
                n
                for n in body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.name == part
            ),
            None,
        )
        if node is None:
            return None
        body = list(getattr(node, "body", []))
    return getattr(node, "lineno", None)


def call_site_line(path: str, def_line: int) -> int:
    """The line of the function at ``def_line`` that hands its target over: its last
    ``return`` (an example's ``return model, (x,)``), else the ``def`` itself."""
    tree, _ = parse_file(path)
    if tree is None:
        return def_line
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == def_line:
            returns = [n.lineno for n in ast.walk(node) if isinstance(n, ast.Return) and n.value]
            return max(returns) if returns else def_line
    return def_line


def call_line(path: str, def_line: int, callee: str) -> int | None:
    """The line in the function defined at ``def_line`` that calls ``callee`` (by name or
    attribute), when exactly one does: where that function's code leads into another frame."""
    tree, _ = parse_file(path)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == def_line:
            lines = {
                n.lineno
                for n in ast.walk(node)
                if isinstance(n, ast.Call)
                and (
                    (isinstance(n.func, ast.Name) and n.func.id == callee)
                    or (isinstance(n.func, ast.Attribute) and n.func.attr == callee)
                )
            }
            return lines.pop() if len(lines) == 1 else None
    return None


def frame_at(path: str, line: int, name: str = "", hint: str | None = None) -> Frame:
    span = expression_span(path, line, hint)
    return Frame(
        path=path,
        line=line,
        name=clean_function_name(name),
        column=span.column,
        end_line=span.end_line,
        end_column=span.end_column,
        code=source_line(path, line).strip(),
    )
