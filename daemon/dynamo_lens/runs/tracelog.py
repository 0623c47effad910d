"""Reading torch's structured trace (``TORCH_TRACE=dir``: one log per rank) as it streams.

Each record is a glog-style line whose tail is a JSON object naming one event (``{"artifact":
{...}, "frame_id": 0, ...}``), followed by its payload as tab-indented lines. File names are
interned: ``{"str": ["/path/model.py", 3]}`` defines string 3 for later stacks. No torch is
needed: a trace copied from a cluster is read on a laptop.

Memory stays bounded whatever the log's size: lines are read one at a time, a payload beyond
``max_payload`` characters is cut (and counted), and a line that is not a record (truncated
by a crash, corrupt) is skipped and counted, never fatal.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import re
import stat
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..texts.breaktext import MAX_LINE_NO

_RECORD = re.compile(r"^[VIWEC]\d{4} [\d:.]+\s+\d+ \S+\] (?P<json>\{.*\})\s*$")
# Bounds on what a log (from anywhere) can make the reader hold: a record line, interned
# strings (file names) and their count, and ranks.
MAX_LINE = 1 << 20
MAX_STRING = 4096
MAX_STRINGS = 100_000
MAX_RANK = 1 << 24
_RANK_IN_NAME = re.compile(r"rank_(\d+)")
# The keys of a record line beside its event: ids, rank, stack (torch/_logging/_internal.py).
META_KEYS = {
    "rank",
    "compiled_autograd_id",
    "frame_id",
    "frame_compile_id",
    "attempt",
    "severity",
    "timestamp",
    "pathname",
    "thread",
    "subgraph_name",
    "stack",
    "has_payload",
}


def number(value: object) -> float:
    """A finite number from a trace field, 0 for anything else (a field another torch renamed or
    retyped, or a hostile one, must not stop the reading)."""
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return x if math.isfinite(x) else 0.0


def line_number(value: object) -> int:
    """A line number from a trace field: 1 for anything a source file cannot have."""
    n = number(value)
    return int(n) if 1 <= n <= MAX_LINE_NO else 1


@dataclass
class Record:
    name: str  # the event: "compilation_metrics", "artifact", "dynamo_start", ...
    body: dict[str, Any]  # the event's own object
    meta: dict[str, Any]  # the line's other keys: frame ids, rank, stack
    payload: str | None
    rank: int | None
    path: str  # the log it came from

    @property
    def compile(self) -> tuple[object, object, object]:
        """Which compilation the record belongs to: (rank, frame id, frame compile id)."""
        return (self.rank, self.meta.get("frame_id"), self.meta.get("frame_compile_id"))


@dataclass
class ReadStats:
    files: int = 0
    records: int = 0
    skipped: list[str] = field(default_factory=list)  # "file:line: why", a bounded sample
    skipped_count: int = 0
    cut_payloads: int = 0

    def skip(self, where: str, why: str) -> None:
        self.skipped_count += 1
        if len(self.skipped) < 20:
            self.skipped.append(f"{where}: {why}")


def printable(path: str | Path) -> str:
    """A path as it can be shown: a file name that is not UTF-8 gets replacement characters."""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def trace_files(paths: Iterable[Path]) -> list[Path]:
    """The logs under ``paths``: folders are searched (``*.log``, ``*.log.gz``, ``*.txt``) without
    following symbolic links (a trace folder from elsewhere may point anywhere); a path named
    on its own is taken as it is."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            for dirpath, dirnames, filenames in os.walk(p, followlinks=False):
                dirnames.sort()
                for name in sorted(filenames):
                    f = Path(dirpath, name)
                    if _is_log(f) and not f.is_symlink() and f.is_file():
                        out.append(f)
        elif p.is_file():
            out.append(p)
    return out


def _is_log(f: Path) -> bool:
    return f.name.endswith((".log", ".log.gz", ".txt", ".txt.gz"))


def _open(path: Path) -> TextIO | None:
    """The log as text, gzip or not; None when it is no regular file (it can name a FIFO or a
    device, which would block or never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        os.set_blocking(fd, True)
        raw = os.fdopen(fd, "rb")
    except OSError:
        os.close(fd)
        return None
    try:
        magic = raw.peek(2)[:2] if isinstance(raw, io.BufferedReader) else b""
    except OSError:
        raw.close()
        return None
    binary: Any = gzip.GzipFile(fileobj=raw) if magic == b"\x1f\x8b" else raw
    return io.TextIOWrapper(binary, encoding="utf-8", errors="replace")


def read(
    paths: Iterable[Path],
    stats: ReadStats | None = None,
    *,
    max_payload: int = 1 << 20,
    strings: dict[int, str] | None = None,
) -> Iterator[Record]:
    """Records of the logs under ``paths``. ``strings``: torch's string table as it stood
    before the logs began (a capture started in a running process: kernel/capture.py)."""
    stats = stats if stats is not None else ReadStats()
    for path in trace_files(paths):
        stats.files += 1
        fh = _open(path)
        if fh is None:
            stats.skip(printable(path.name), "not a regular file")
            continue
        try:
            yield from _read_one(fh, path, stats, max_payload, dict(strings or {}))
        except (OSError, EOFError, zlib.error) as exc:
            # A truncated or corrupt .gz, an unreadable file: what came before still counts.
            stats.skip(printable(path.name), f"unreadable from here on ({type(exc).__name__})")
        finally:
            fh.close()


def _lines(fh: TextIO, limit: int) -> Iterator[tuple[str, bool]]:
    """(line, whole) for each line, at most ``limit`` characters kept: a line of gigabytes (a
    broken or hostile log) costs ``limit`` in memory, the rest of it is skipped."""
    while True:
        line = fh.readline(limit)
        if not line:
            return
        if line.endswith("\n") or len(line) < limit:
            yield line, True
            continue
        while (more := fh.readline(limit)) and not more.endswith("\n"):
            pass
        yield line, False


def _rank(value: Any) -> int | None:
    """A rank as a record names it: a small non-negative int, else none."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_RANK:
        return None
    return value


def _read_one(
    fh: TextIO, path: Path, stats: ReadStats, max_payload: int, strings: dict[int, str]
) -> Iterator[Record]:
    m = _RANK_IN_NAME.search(path.name)
    file_rank = _rank(int(m.group(1))) if m and len(m.group(1)) < 10 else None
    name = printable(path.name)
    pending: tuple[dict[str, Any], list[str], int] | None = None  # (line object, payload, size)

    def finish() -> Record | None:
        if pending is None:
            return None
        obj, parts, size = pending
        names = [k for k in obj if k not in META_KEYS]
        if not names:
            return None
        event = names[0]
        body = obj[event] if isinstance(obj[event], dict) else {"value": obj[event]}
        meta = {k: v for k, v in obj.items() if k in META_KEYS}
        if "stack" in meta:
            meta["stack"] = _frames(meta["stack"], strings)
        if event == "dynamo_start" and "stack" in body:
            body["stack"] = _frames(body["stack"], strings)
        rank = _rank(obj["rank"]) if "rank" in obj else file_rank
        payload = "\n".join(parts) if parts or obj.get("has_payload") else None
        if size > max_payload:
            stats.cut_payloads += 1
            payload = (payload or "") + f"\n... (cut, {size} characters)"
        stats.records += 1
        return Record(event, body, meta, payload, rank, printable(path))

    for lineno, (line, whole) in enumerate(_lines(fh, MAX_LINE), 1):
        if line.startswith("\t"):
            if pending is not None:
                text = line[1:].rstrip("\n")
                obj, parts, size = pending
                if not whole:  # a payload line of gigabytes: counted as cut, never kept
                    size = max(size, max_payload) + 1
                elif size + len(text) <= max_payload:
                    parts.append(text)
                pending = (obj, parts, size + len(text) + 1)
            continue
        rec = finish()
        pending = None
        if rec is not None:
            yield rec
        if not line.strip():
            continue
        if not whole:
            stats.skip(f"{name}:{lineno}", f"a line over {MAX_LINE} characters")
            continue
        m2 = _RECORD.match(line)
        if m2 is None:
            stats.skip(f"{name}:{lineno}", "not a trace record")
            continue
        try:
            obj = json.loads(m2["json"])
        except (ValueError, RecursionError):
            stats.skip(f"{name}:{lineno}", "unreadable JSON (a truncated or nested line?)")
            continue
        if not isinstance(obj, dict):
            stats.skip(f"{name}:{lineno}", "not an object")
            continue
        if "str" in obj:
            if not _intern(obj["str"], strings):
                stats.skip(f"{name}:{lineno}", "an unusable string-table entry")
            continue
        pending = (obj, [], 0)
    rec = finish()
    if rec is not None:
        yield rec


def _intern(entry: Any, strings: dict[int, str]) -> bool:
    """``{"str": [text, index]}``: string ``index`` is ``text`` from now on (a bounded table)."""
    if not (isinstance(entry, list) and len(entry) == 2):
        return False
    text, idx = entry
    if not isinstance(text, str) or isinstance(idx, bool) or not isinstance(idx, int):
        return False
    if len(strings) >= MAX_STRINGS and idx not in strings:
        return False
    strings[idx] = text[:MAX_STRING]
    return True


def _frames(stack: Any, strings: dict[int, str]) -> list[dict[str, Any]]:
    """Structured frames with interned file names resolved."""
    out = []
    for f in stack if isinstance(stack, list) else []:
        if not isinstance(f, dict):
            continue
        fname = f.get("filename")
        if isinstance(fname, int):
            fname = strings.get(fname, f"<string {fname}>")
        out.append({**f, "filename": fname})
    return out
