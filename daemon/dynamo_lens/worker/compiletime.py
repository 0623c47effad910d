"""Where a target's Dynamo compile time goes, by source function: each compiled frame's time
from torch's compilation metrics, the frames torch makes of a function after a graph break
(``torch_dynamo_resume_in_f_at_N``) counted with ``f``, so the functions add up to torch's
total.

Dynamo's own per-function profiler (torch 2.11+) would split inlined functions too, but on
torch 2.13 it fails on any target with a graph break and its per-function times exceeded the
frame's compile time, so it is not used.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from ..texts.locate import Workspace, display_path

# The hover shows a few; the report keeps this many.
MAX_FUNCTIONS = 20
_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_\d+$")


def _seconds(value: object) -> float:
    try:
        return max(float(value), 0.0)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0


def by_function(metrics: list[dict[str, Any]], ws: Workspace) -> dict[str, Any]:
    """``{"functions": [{name, path, line, seconds, library}], "total": s}``, the costliest
    first: Dynamo's time (the backend's excluded) per compiled function."""
    Key = tuple[str, str]  # (name, path)
    spent: dict[Key, float] = defaultdict(float)
    first: dict[Key, int] = {}
    for m in metrics:
        name, path = str(m.get("co_name") or ""), str(m.get("co_filename") or "")
        if resumed := _RESUME.match(name):
            name = resumed["fn"]
        key = (name, path)
        total = _seconds(m.get("entire_frame_compile_time_s"))
        spent[key] += max(total - _seconds(m.get("backend_compile_time_s")), 0.0)
        line = int(_seconds(m.get("co_firstlineno")))
        first[key] = min(first.get(key, line), line)
    rows = [
        {
            "name": name,
            "path": path if ws.contains(path) else display_path(path),
            "line": first[(name, path)],
            "seconds": round(s, 6),
            "library": not ws.contains(path),
        }
        for (name, path), s in sorted(spent.items(), key=lambda kv: (-kv[1], kv[0]))
        if name
    ]
    return {"functions": rows[:MAX_FUNCTIONS], "total": round(sum(spent.values()), 6)}
