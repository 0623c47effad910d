"""A run as the editor keeps it: its findings and per-function reports by file, the
distinct-break summary, and where it came from. Plain data: stored with the cache's msgpack
(``to_wire``) and kept across daemon restarts until cleared."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..findings import FileResult, TargetReport


@dataclass
class SummaryRow:
    """One distinct break: the "simple list of action items" (pytorch/pytorch#153669)."""

    path: str
    line: int
    gb_id: str | None
    what: str
    count: int
    frames: int
    ranks: str
    compile_seconds: float  # compile time of the frames that broke here


@dataclass
class LoadedRun:
    provenance: str  # 'run "python train.py" at 14:02', 'trace rank_0.log'
    loaded_at: float
    results: list[FileResult] = field(default_factory=list)
    summary: list[SummaryRow] = field(default_factory=list)
    exit_code: int | None = None  # None: a trace loaded, not a command run here
    cancelled: bool = False
    torch: str = ""
    dynamo_seconds: float = 0.0
    inductor_seconds: float = 0.0
    frames_compiled: int = 0
    records: int = 0
    skipped: int = 0  # trace lines that could not be read
    files: int = 0  # trace logs read
    outside: int = 0  # records with no frame in the workspace, shown at their recorded paths

    def functions(self) -> list[TargetReport]:
        """The compiled functions, the costliest to compile first (ties by place)."""
        reports = [rep for r in self.results for rep in r.reports]
        return sorted(
            reports,
            key=lambda r: (-float(r.environment.get("compile_seconds") or 0.0), r.path, r.line),
        )
