"""Structured-trace logs written by hand, the way torch writes them, with whatever a hostile or
broken one could say: for the robustness tests of traces from anywhere and for
bench/reliability's hostile-trace set."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# What torch's structured-trace logger puts before each record's JSON.
PREFIX = "V1203 10:16:53.434000 19688 torch/_dynamo/symbolic_convert.py:5098] "
SCRIPT = """\
import torch


def step(x):
    y = x * 2
    if y.sum() > 0:
        y = y + 1
    return y
"""
BREAK_LINE = 6


def record(obj: Any, payload: Iterable[str] = ()) -> str:
    lines = [PREFIX + json.dumps(obj)]
    lines += ["\t" + p for p in payload]
    return "\n".join(lines)


def graph_break(
    site: tuple[str, int | str],
    frames: list[tuple[str, int | str, str]],
    *,
    frame_id: int = 0,
    first_line: str | None = None,
    rank: Any = None,
) -> str:
    """A ``dynamo_graph_break_reason`` artifact: torch's site, its reason, the user traceback."""
    head: dict[str, Any] = {
        "artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"},
        "frame_id": frame_id,
        "frame_compile_id": 0,
        "attempt": 0,
        "has_payload": "0",
    }
    if rank is not None:
        head["rank"] = rank
    payload = [
        first_line or f"Graph break in user code at {site[0]}:{site[1]}",
        "Graph Break Reason: Data-dependent branching",
        "  Explanation: Detected data-dependent branching.",
        "",
        " For more details about this graph break, please visit: "
        "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html",
        "",
        "User code traceback:",
    ]
    for path, line, fn in frames:
        payload += [f'  File "{path}", line {line}, in {fn}', "    if y.sum() > 0:"]
    return record(head, payload)


def metrics(frame_id: int = 0, compile_id: int = 0, **fields: Any) -> str:
    """A ``compilation_metrics`` record; ``fields`` override the ordinary ones."""
    body = {
        "co_name": "step",
        "co_filename": "",
        "co_firstlineno": 4,
        "guard_count": 8,
        "entire_frame_compile_time_s": 0.1,
        "inductor_compile_time_s": None,
        "fail_type": None,
        "fail_reason": None,
        "recompile_reason": None,
        "pytorch_version": "2.13.0",
        **fields,
    }
    return record(
        {"compilation_metrics": body, "frame_id": frame_id, "frame_compile_id": compile_id}
    )


def workspace(root: Path) -> Path:
    """A workspace whose ``train.py`` breaks at ``BREAK_LINE``."""
    ws = root / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "train.py").write_text(SCRIPT)
    return ws


def write(path: Path, lines: Iterable[str], *, gz: bool = False) -> Path:
    text = "\n".join(lines) + "\n"
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


def one_break(ws: Path, *extra_frames: tuple[str, int | str, str], **kw: Any) -> str:
    """The user's break at ``train.py:BREAK_LINE``, its traceback going on into
    ``extra_frames`` (library frames, say)."""
    train = str(ws / "train.py")
    frames = [(train, BREAK_LINE, "step"), *extra_frames]
    return graph_break((train, BREAK_LINE), frames, **kw)
