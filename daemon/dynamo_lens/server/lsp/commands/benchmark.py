"""The palette's benchmark of one target: timings on the devices asked for, with progress per
device and the client's cancel."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....engine.cancel import CancelToken
from ...summary import benchmark_result, timing_table
from ..app import CMD, DynamoLensServer
from .kit import Progress, background, file_path


@dataclass
class BenchmarkArgs:
    uri: str
    target: str
    devices: list[str] | None = None
    mode: str | None = None
    dynamic: bool | None = None
    workDoneToken: str | int | None = None


def benchmark(ls: DynamoLensServer, req: BenchmarkArgs) -> dict[str, Any]:
    cancel = CancelToken()
    progress = Progress(ls, req.workDoneToken)
    n = max(len(req.devices or ["cpu"]), 1)
    timed = 0

    def on_progress(msg: dict[str, Any]) -> None:
        nonlocal timed
        if msg.get("stage") == "timings":
            timed += 1
            pct = min(95, int(100 * (timed - 0.5) / n))
            progress.report(f"timing on {msg.get('device')}", pct)

    progress.begin("Dynamo Lens: benchmark", req.target, cancel.cancel)
    try:
        report = ls.svc().analyses.benchmark(
            file_path(req.uri),
            req.target,
            devices=req.devices or None,
            mode=req.mode,
            dynamic=req.dynamic,
            cancel=cancel,
            on_progress=on_progress,
        )
    except BaseException:
        progress.end("failed")
        raise
    if report is None:
        progress.end("cancelled")
        return {"cancelled": True, "target": req.target}
    progress.end("done")
    ls.log_line(f"benchmark {report.target}:\n{timing_table(report)}")
    return benchmark_result(report, req.uri)


def register(ls: DynamoLensServer) -> None:
    ls.command(CMD + "benchmark")(background(benchmark))
