"""A Python file's bytes before any code runs: hash, decoding (PEP 263), syntax, discovery."""

from __future__ import annotations

import ast
import hashlib
import io
import os
import stat
import tokenize
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from ..findings import Finding
from .errors import error_at


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# Past this a file is no source file of anyone's (and hashing it would take a while).
MAX_HASHED_BYTES = 256 << 20


def file_hash(path: str | os.PathLike[str]) -> str | None:
    """``content_hash`` of a regular file's bytes now; None when it cannot be read, is not a
    regular file (a FIFO or a device would block or never end) or is over 256 MB."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_HASHED_BYTES:
            return None
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def decode_source(path: str, data: bytes) -> tuple[str | None, Finding | None]:
    """Text of a Python file per PEP 263, or an error finding on the first bad byte."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return None, error_at(path, 1, f"Cannot read this file: {exc}")
    try:
        return data.decode(encoding), None
    except (UnicodeDecodeError, LookupError) as exc:
        start = getattr(exc, "start", 0)
        line = data[:start].count(b"\n") + 1
        col = start - (data.rfind(b"\n", 0, start) + 1) + 1
        bad = data[start : start + 1].hex()
        return None, error_at(
            path,
            line,
            f"This file is not valid {encoding}: byte 0x{bad} at line {line}, column {col}",
            explanation="Python reads source files as UTF-8 unless a coding declaration "
            "(`# -*- coding: latin-1 -*-`) says otherwise; no code from this file was run.",
            hints=["Re-save the file as UTF-8, or add a coding declaration on line 1 or 2."],
            column=col,
            end_column=col + 1,
        )


def syntax_error(path: str, text: str) -> Finding | None:
    try:
        ast.parse(text, filename=path)
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = exc.offset or 1
        end_col = getattr(exc, "end_offset", None)
        end_line = getattr(exc, "end_lineno", None) or line
        return error_at(
            path,
            line,
            f"SyntaxError: {exc.msg}",
            explanation="The file does not parse, so nothing in it was analysed.",
            column=col,
            end_column=end_col if end_col and end_line == line and end_col > col else col + 1,
        )
    except ValueError as exc:  # e.g. null bytes
        return error_at(path, 1, f"Cannot parse this file: {exc}")
    return None


def iter_python_files(
    paths: Iterable[Path], excludes: Sequence[str], notebooks: list[Path] | None = None
) -> Iterator[Path]:
    """The Python files given and under the folders given; ``notebooks`` collects the
    ``.ipynb`` files the folders hold (``check`` analyses them, ``fix`` says it leaves them)."""
    ex = set(excludes)
    for p in paths:
        if p.is_file():
            yield p.resolve()
            continue
        for dirpath, dirnames, filenames in os.walk(p):
            dirnames[:] = sorted(d for d in dirnames if d not in ex and not d.startswith("."))
            for name in sorted(filenames):
                if name.lower().endswith(".ipynb") and notebooks is not None:
                    # Resolved, as a file given by name is: one notebook, one path.
                    try:
                        notebooks.append(Path(dirpath, name).resolve())
                    except (OSError, RuntimeError):
                        continue
                if name.endswith(".py"):
                    try:
                        yield Path(dirpath, name).resolve()
                    except (OSError, RuntimeError):  # a link loop: not a file to read
                        continue
