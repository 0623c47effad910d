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
    assert recs[1].compile == (1, 0, 0)  # (rank, frame, compilation of the frame)
    assert recs[2].compile == (3, 0, 1)
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


def test_a_trace_from_an_unknown_torch_is_read_as_far_as_it_goes(tmp_path: Path) -> None:
    """Events we do not know, fields renamed or missing, a break without torch's usual
    traceback: what can be read is read, nothing fails."""
    from dynamo_lens.runs.command import trace_results

    ws = tmp_path / "w"
    ws.mkdir()
    (ws / "model.py").write_text("\n".join(f"x{i} = {i}" for i in range(20)) + "\n")
    model = str(ws / "model.py")
    log = tmp_path / "future.log"
    log.write_text(
        _line({"str": [model, 0]})
        + _line({"a_new_event_of_torch_3": {"anything": [1, 2]}, "frame_id": 0})
        + _line(
            {
                "artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"},
                "frame_id": 0,
                "frame_compile_id": 0,
                "has_payload": "ab",
            }
        )
        + f"\tGraph break in user code at {model}:9\n"
        + "\tGraph Break Reason: Some break torch 3 describes\n"
        + "\tUser code traceback:\n"
        + f'\t  File "{model}", line 9, in forward\n'
        + _line(
            {
                "compilation_metrics": {
                    "co_filename": model,
                    "co_firstlineno": 5,
                    "co_name": "forward",
                    "entire_frame_compile_time_s": "not a number?",
                    "renamed_field": 1,
                },
                "frame_id": 0,
                "frame_compile_id": 0,
            }
        )
        + _line({"compilation_metrics": {}, "frame_id": 1, "frame_compile_id": 0})
    )
    run = trace_results([log], ws, [], "trace future.log")
    assert run.records == 4 and run.skipped == 0  # the string table is no record
    (result,) = run.results
    (f,) = result.findings
    assert (f.kind.value, f.line) == ("graph_break", 9)
    (report,) = result.reports
    assert (report.target, report.break_count) == ("model.py::forward@5", 1)
