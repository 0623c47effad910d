"""A stopped analysis job's progress, kept: each target's last report, the check that was
running named in the job's error, and the rest of the progress passed on (engine/partial.py)."""

from __future__ import annotations

from typing import Any

from dynamo_lens.engine.partial import Partial
from dynamo_lens.findings import TargetReport, to_wire
from dynamo_lens.texts.errors import error_at


def _report(target: str, checks: list[str]) -> dict[str, Any]:
    return to_wire(TargetReport(target=target, path="m.py", line=3, kind="example", checks=checks))


def test_reports_are_kept_and_the_running_check_is_named() -> None:
    seen: list[dict[str, Any]] = []
    p = Partial(seen.append)
    p({"stage": "breaks", "target": "m.py::a"})
    p({"stage": "checked", "target": "m.py::a", "report": _report("m.py::a", ["breaks"])})
    p({"stage": "recompiles", "target": "m.py::a"})
    p(
        {
            "stage": "checked",
            "target": "m.py::a",
            "report": _report("m.py::a", ["breaks", "recompiles"]),
        }
    )
    p({"stage": "breaks", "target": "m.py::b"})
    p({"stage": "checked", "target": "m.py::b", "report": _report("m.py::b", ["breaks"])})
    p({"stage": "recompiles", "target": "m.py::b"})
    # The reports stay with the daemon; the steps go on to whoever shows progress.
    assert [m["stage"] for m in seen] == ["breaks", "recompiles", "breaks", "recompiles"]
    assert [(r.target, r.checks) for r in p.reports()] == [
        ("m.py::a", ["breaks", "recompiles"]),
        ("m.py::b", ["breaks"]),
    ]
    died = error_at("m.py", 9, "Analysis stopped: timed out after 30 s (the job was stopped)")
    said = p.stopped(died)
    assert said.message == (
        "Analysis stopped in the recompile check of b: timed out after 30 s (the job was stopped)"
    )
    assert said.explanation.startswith("The findings of the checks that finished")
    assert (said.path, said.line, said.kind) == (died.path, died.line, died.kind)
    assert said.data["stopped"] == "m.py::b"  # no fix is verified for it (engine/fixing.py)
    # An internal error is not a stop: said as it was.
    bug = error_at("m.py", 1, "Dynamo Lens internal error while analysing: KeyError")
    assert p.stopped(bug) == bug


def test_a_job_stopped_before_any_check_is_its_error_as_it_was() -> None:
    p = Partial(None)
    died = error_at("m.py", 1, "Analysis stopped: the worker crashed (segmentation fault)")
    assert p.stopped(died) == died
    assert p.reports() == []


def test_the_targets_the_worker_reuses_are_said_before_any_runs() -> None:
    """The daemon's results for them stand in when the job stops (engine/analysis.py); a
    second word replaces the first (the rest of the targets ran after all)."""
    p = Partial(None)
    both = [{"target": "m.py::u[0]", "key": 1}, {"target": "m.py::u[2]", "key": 2}]
    order = ["m.py::u[0]", "m.py::u[1]", "m.py::u[2]"]
    p({"stage": "reused", "target": "", "reused": both, "order": order})
    assert (p.reused, p.order) == (both, order)
    p({"stage": "reused", "target": "", "reused": both[:1], "order": order})
    assert p.reused == both[:1]
