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
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

_RECORD = re.compile(r"^[VIWEC]\d{4} [\d:.]+\s+\d+ \S+\] (?P<json>\{.*\})\s*$")
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


def trace_files(paths: Iterable[Path]) -> list[Path]:
    """The logs under ``paths``: folders are searched (``*.log``, ``*.log.gz``, ``*.txt``)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = [f for f in sorted(p.rglob("*")) if f.is_file() and _is_log(f)]
            out.extend(found)
        elif p.is_file():
            out.append(p)
    return out


def _is_log(f: Path) -> bool:
    return f.name.endswith((".log", ".log.gz", ".txt", ".txt.gz"))


def _open(path: Path) -> TextIO:
    with path.open("rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    return path.open("r", encoding="utf-8", errors="replace")


def read(
    paths: Iterable[Path], stats: ReadStats | None = None, *, max_payload: int = 1 << 20
) -> Iterator[Record]:
    stats = stats if stats is not None else ReadStats()
    for path in trace_files(paths):
        stats.files += 1
        yield from _read_one(path, stats, max_payload)


def _read_one(path: Path, stats: ReadStats, max_payload: int) -> Iterator[Record]:
    m = _RANK_IN_NAME.search(path.name)
    file_rank = int(m.group(1)) if m else None
    strings: dict[int, str] = {}
    pending: tuple[dict[str, Any], list[str], int] | None = None  # (line object, payload, size)

    def finish() -> Record | None:
        if pending is None:
            return None
        obj, parts, size = pending
        names = [k for k in obj if k not in META_KEYS]
        if not names:
            return None
        name = names[0]
        body = obj[name] if isinstance(obj[name], dict) else {"value": obj[name]}
        meta = {k: v for k, v in obj.items() if k in META_KEYS}
        if "stack" in meta:
            meta["stack"] = _frames(meta["stack"], strings)
        if name == "dynamo_start" and "stack" in body:
            body["stack"] = _frames(body["stack"], strings)
        rank = obj.get("rank", file_rank)
        payload = "\n".join(parts) if parts or obj.get("has_payload") else None
        if size > max_payload:
            stats.cut_payloads += 1
            payload = (payload or "") + f"\n... (cut, {size} characters)"
        stats.records += 1
        return Record(name, body, meta, payload, rank, str(path))

    with _open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            if line.startswith("\t"):
                if pending is not None:
                    text = line[1:].rstrip("\n")
                    obj, parts, size = pending
                    if size + len(text) <= max_payload:
                        parts.append(text)
                    pending = (obj, parts, size + len(text) + 1)
                continue
            rec = finish()
            pending = None
            if rec is not None:
                yield rec
            if not line.strip():
                continue
            m2 = _RECORD.match(line)
            if m2 is None:
                stats.skip(f"{path.name}:{lineno}", "not a trace record")
                continue
            try:
                obj = json.loads(m2["json"])
            except ValueError:
                stats.skip(f"{path.name}:{lineno}", "unreadable JSON (a truncated line?)")
                continue
            if not isinstance(obj, dict):
                stats.skip(f"{path.name}:{lineno}", "not an object")
                continue
            if "str" in obj and isinstance(obj["str"], list) and len(obj["str"]) == 2:
                text, idx = obj["str"]
                strings[int(idx)] = str(text)
                continue
            pending = (obj, [], 0)
    rec = finish()
    if rec is not None:
        yield rec


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
