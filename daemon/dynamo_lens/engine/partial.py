"""What an analysis job had found when it was stopped. The worker reports each target's
findings as each check finishes (``stage="checked"``, worker/jobs.py); a job then stopped at
its time or memory limit, or by a crash in user code, still shows what the finished checks
found (the breaks of a target whose recompile variants ran past the limit), and its error says
which check of which target was running."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..findings import Finding, TargetId, TargetReport, from_wire

ProgressFn = Callable[[dict[str, Any]], None]

# Why no rewrite is verified for a target whose analysis was stopped (engine/fixing.py, the
# editor's server/verdicts.py).
STOPPED_WHY = (
    "its analysis was stopped before it finished (see its error): verifying runs its calls again"
)
_STOPPED = "Analysis stopped:"  # how the engine's error for a stopped job begins (analysis.py)
# The worker's stage names, as a sentence says them.
_CHECK_NAMES = {
    "breaks": "the graph-break check",
    "recompiles": "the recompile check",
    "equivalence": "the compiled-vs-eager comparison",
    "timings": "the timing",
}


class Partial:
    """Passes the job's progress on (``forward``) and keeps each target's latest report."""

    def __init__(self, forward: ProgressFn | None) -> None:
        self._forward = forward
        self._reports: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []  # the targets, in the order the example returned them
        # The targets the worker does not analyse again, as its result would list them.
        self.reused: list[dict[str, Any]] = []
        self._target: str | None = None  # the target being analysed, from its start
        self._running = ""  # the check of it running now ("" between checks)

    def __call__(self, msg: dict[str, Any]) -> None:
        target = str(msg.get("target", ""))
        if msg.get("stage") == "reused":  # the daemon holds their results (targetkeys.py)
            self.reused, self.order = list(msg.get("reused") or []), list(msg.get("order") or [])
            return
        if msg.get("stage") == "target":
            self._target, self._running = target, ""
            return
        if msg.get("stage") == "checked":
            self._reports[target] = msg.get("report") or {}
            self._running = ""
            return  # a report is the daemon's to keep, not a step to show
        if msg.get("stage") in _CHECK_NAMES:
            self._target, self._running = target, str(msg["stage"])
        if self._forward is not None:
            self._forward(msg)

    def reports(self) -> list[TargetReport]:
        """Each target's report as its last finished check left it, in the order they ran
        (``order``: the example's, where the worker said it)."""
        return [from_wire(r, TargetReport) for r in self._reports.values()]

    def stopped(self, error: Finding) -> Finding:
        """The job's error, saying which check of which target was running and that the
        finished checks' findings are kept, with ``data["stopped"]``: the target it stopped in
        ("" where none had begun). A result that holds one runs no more of its calls (no fix is
        verified, the slower checks do not follow). An internal error is said as it was."""
        if not error.message.startswith(_STOPPED):
            return error
        where = ""
        if self._target is not None:
            short = TargetId.parse(self._target).short
            check = _CHECK_NAMES.get(self._running)
            where = f" in {check} of {short}" if check else f" while analysing {short}"
        kept = (
            "The findings of the checks that finished before it stopped are shown."
            if self._reports or self.reused
            else ""
        )
        return replace(
            error,
            message=error.message.replace(_STOPPED, f"Analysis stopped{where}:", 1),
            explanation="\n".join(s for s in (kept, error.explanation) if s),
            data={**error.data, "stopped": self._target or ""},
        )
