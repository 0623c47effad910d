"""Reading torch's structured trace without torch: records, interned names, ranks, faults."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from dynamo_lens.runs.tracelog import ReadStats, read


def _line(obj: dict[str, object]) -> str:
    return f"V1203 01:22:43.491000 14782 torch/_dynamo/x.py:1] {json.dumps(obj)}\n"


TRACE = (
    _line({"str": ["/w/model.py", 0]})
    + _line(
        {
            "dynamo_start": {"stack": [{"line": 7, "name": "forward", "filename": 0}]},
            "frame_id": 0,
            "frame_compile_id": 0,
            "attempt": 0,
        }
    )
    + _line(
        {
            "artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"},
            "frame_id": 0,
            "frame_compile_id": 0,
            "attempt": 0,
            "has_payload": "ab",
        }
    )
    + "\tGraph break in user code at /w/model.py:9\n"
    + "\tGraph Break Reason: Data-dependent branching\n"
    + 'V1203 01:22:43 this line was cut off by a crash {"artif\n'
    + _line(
        {
            "compilation_metrics": {"co_name": "forward", "recompile_reason": None},
            "frame_id": 0,
            "frame_compile_id": 1,
            "attempt": 1,
            "rank": 3,
        }
    )
)


def test_records_payloads_and_interned_file_names(tmp_path: Path) -> None:
    (tmp_path / "dedicated_log_torch_trace_rank_1_abc.log").write_text(TRACE)
    stats = ReadStats()
    recs = list(read([tmp_path], stats))
    assert [r.name for r in recs] == ["dynamo_start", "artifact", "compilation_metrics"]
    assert recs[0].body["stack"][0]["filename"] == "/w/model.py"
    assert recs[1].payload is not None and recs[1].payload.startswith("Graph break in user code")
    assert recs[1].compile_id == "0/0"
    assert recs[2].compile_id == "0/1_1"
    assert [r.rank for r in recs] == [1, 1, 3]  # the file's rank, unless the record says
    assert stats.files == 1 and stats.records == 3 and stats.skipped_count == 1


def test_gzip_logs_and_bounded_payloads(tmp_path: Path) -> None:
    big = _line({"artifact": {"name": "x"}, "has_payload": "h"}) + "".join(
        f"\t{'y' * 100}\n" for _ in range(1000)
    )
    with gzip.open(tmp_path / "t.log.gz", "wt") as fh:
        fh.write(big)
    stats = ReadStats()
    (rec,) = list(read([tmp_path / "t.log.gz"], stats, max_payload=1000))
    assert rec.payload is not None and len(rec.payload) < 1200 and "(cut, " in rec.payload
    assert stats.cut_payloads == 1


def test_an_empty_or_foreign_file_reads_as_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty.log").write_text("")
    (tmp_path / "other.log").write_text("hello\nworld\n")
    stats = ReadStats()
    assert list(read([tmp_path], stats)) == []
    assert stats.files == 2 and stats.skipped_count == 2
