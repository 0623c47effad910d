"""A large trace is streamed: reading 10× more log costs no more memory (bounded payloads,
one line at a time), and every copy of the break is still counted."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from conftest import REPO
from support import peakmem
from support.tracerun import break_trace


def _grow(src: Path, dst: Path, size: int) -> int:
    """``src`` repeated to ``size`` bytes, each copy's frames renumbered; the copies made."""
    data = src.read_bytes()
    ids = [int(m) for m in re.findall(rb'"frame_id": (\d+)', data)]
    top = max(ids, default=0) + 1
    copies = 0
    with dst.open("wb") as fh:
        while fh.tell() < size:
            off = copies * top

            def shift(m: re.Match[bytes], off: int = off) -> bytes:
                return b'"frame_id": %d' % (int(m[1]) + off)

            fh.write(re.sub(rb'"frame_id": (\d+)', shift, data))
            copies += 1
    return copies


def _read(log: Path, ws: Path) -> tuple[dict[str, object], float]:
    """The trace command's JSON report and its peak RSS in MiB."""
    out = log.with_suffix(".json")
    env = {**os.environ, "PYTHONPATH": str(REPO / "daemon")}
    args = ["trace", str(log), "--format", "json", "-o", str(out)]
    done = peakmem.cli(args, ws, timeout=600, env=env)
    assert done.rc in (0, 1), done.err
    return json.loads(out.read_text()), done.peak_mib


def test_a_ten_times_larger_trace_is_read_in_the_same_memory(tmp_path: Path) -> None:
    ws, trace = break_trace(tmp_path)
    (seed,) = trace.iterdir()
    small, large = tmp_path / "small.log", tmp_path / "large.log"
    n_small = _grow(seed, small, 20_000_000)
    n_large = _grow(seed, large, 200_000_000)
    doc_small, rss_small = _read(small, ws)
    doc_large, rss_large = _read(large, ws)
    (f_small,) = doc_small["findings"]  # type: ignore[misc]
    (f_large,) = doc_large["findings"]  # type: ignore[misc]
    assert f_small["line"] == f_large["line"] == 6
    assert f"{n_small}×" in f_small["note"] and f"{n_large}×" in f_large["note"]
    # 180 MB more log; what grows is the per-frame bookkeeping, not the log.
    assert rss_large - rss_small < 40, (rss_small, rss_large)
