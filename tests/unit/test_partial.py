"""A stopped analysis job's progress, kept: each target's last report, the check that was
running named in the job's error, and the rest of the progress passed on (engine/partial.py)."""

from __future__ import annotations

from typing import Any

from dynamo_lens.engine.partial import Partial
from dynamo_lens.findings import FileResult, TargetReport, to_wire
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


def test_a_job_stopped_between_checks_names_its_target_and_marks_the_result() -> None:
    """Stopped after a target began but outside any check (loading a backend): named as the
    target being analysed; before any began: no target. Either way the result is stopped, so
    nothing runs its calls again (FileResult.stopped)."""
    died = error_at("m.py", 4, "Analysis stopped: timed out after 30 s (the job was stopped)")
    p = Partial(None)
    p({"stage": "target", "target": "m.py::u[0]"})
    p({"stage": "checked", "target": "m.py::u[0]", "report": _report("m.py::u[0]", ["breaks"])})
    p({"stage": "target", "target": "m.py::u[1]"})
    said = p.stopped(died)
    assert said.message.startswith("Analysis stopped while analysing u[1]: timed out"), said
    assert said.data["stopped"] == "m.py::u[1]"
    none_began = Partial(None)
    first = none_began.stopped(died)
    assert (first.message, first.explanation) == (died.message, died.explanation)
    assert first.data["stopped"] == "" and none_began.reports() == []
    result = FileResult("m.py", "", findings=[first])
    assert result.stopped and not FileResult("m.py", "", findings=[died]).stopped
