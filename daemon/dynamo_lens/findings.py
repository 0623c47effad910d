"""The one data type that flows worker -> cache -> diagnostics, CLI and SARIF.

Everything here is plain data: dataclasses that round-trip through ``to_dict``/``from_dict``
into msgpack- and JSON-safe dicts, so the worker, the cache and every output format share it
without reshaping. Lines and columns are 1-based; ``end_column`` is exclusive.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

GB_DOC_BASE = "https://meta-pytorch.github.io/compile-graph-break-site/gb/"


def gb_doc_url(gb_id: str | None) -> str | None:
    """``GB0124`` -> the graph-break site's page for it (torch links the same pages)."""
    if not gb_id or not gb_id.startswith("GB") or not gb_id[2:].isdigit():
        return None
    return f"{GB_DOC_BASE}gb{gb_id[2:]}.html"


class Kind(str, Enum):
    GRAPH_BREAK = "graph_break"
    RECOMPILE = "recompile"
    MISMATCH = "mismatch"
    ERROR = "error"
    STATIC_HINT = "static_hint"


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFORMATION = "information"
    HINT = "hint"

    @property
    def rank(self) -> int:
        return _SEVERITY_RANK[self]


_SEVERITY_RANK = {
    Severity.ERROR: 3,
    Severity.WARNING: 2,
    Severity.INFORMATION: 1,
    Severity.HINT: 0,
}


@dataclass(frozen=True)
class Frame:
    """One user-code frame: where a call chain passed through."""

    path: str
    line: int
    name: str = ""
    column: int = 0
    end_line: int = 0
    end_column: int = 0
    code: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Frame:
        return cls(**{k: d[k] for k in _FRAME_FIELDS if k in d})


_FRAME_FIELDS = tuple(f.name for f in dataclasses.fields(Frame))


@dataclass
class Finding:
    kind: Kind
    severity: Severity
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    explanation: str = ""
    hints: list[str] = field(default_factory=list)
    gb_id: str | None = None
    doc_url: str | None = None
    stack: list[Frame] = field(default_factory=list)
    target: str | None = None
    device: str | None = None
    # Analysis-specific facts (guard expression, values seen, max errors, ...) for renderers.
    data: dict[str, Any] = field(default_factory=dict)

    def key(self) -> tuple[str, str, int, int, str, str | None]:
        """Identity used to deduplicate the same site reported twice."""
        return (self.kind.value, self.path, self.line, self.column, self.message, self.device)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "severity": self.severity.value,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "message": self.message,
            "explanation": self.explanation,
            "hints": list(self.hints),
            "gb_id": self.gb_id,
            "doc_url": self.doc_url,
            "stack": [f.to_dict() for f in self.stack],
            "target": self.target,
            "device": self.device,
            "data": dict(self.data),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        return cls(
            kind=Kind(d["kind"]),
            severity=Severity(d["severity"]),
            path=d["path"],
            line=int(d["line"]),
            column=int(d["column"]),
            end_line=int(d["end_line"]),
            end_column=int(d["end_column"]),
            message=d["message"],
            explanation=d.get("explanation", ""),
            hints=list(d.get("hints", [])),
            gb_id=d.get("gb_id"),
            doc_url=d.get("doc_url"),
            stack=[Frame.from_dict(f) for f in d.get("stack", [])],
            target=d.get("target"),
            device=d.get("device"),
            data=dict(d.get("data", {})),
        )


@dataclass
class DeviceTiming:
    """Eager vs compiled timings on one device. Seconds throughout."""

    device: str
    eager_median: float
    eager_iqr: float
    compiled_median: float
    compiled_iqr: float
    cold_compile: float
    eager_first_call: float
    repeats: int
    speedup: float
    # Calls after which the compile cost is paid back; None when compiling never pays.
    break_even_calls: float | None
    small_inputs: bool = False
    mode: str = "default"
    dynamic: bool | None = None
    backend: str = "inductor"
    threads: int = 1  # CPU threads during the measurement

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DeviceTiming:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class TargetReport:
    """Everything one target's analysis produced."""

    target: str
    path: str
    line: int
    kind: str  # "example" | "config" | "guess"
    findings: list[Finding] = field(default_factory=list)
    timings: list[DeviceTiming] = field(default_factory=list)
    graph_count: int = 0
    break_count: int = 0
    recompile_count: int = 0
    input_shapes: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    content_hash: str = ""
    measured_at: float = 0.0
    checks: list[str] = field(default_factory=list)
    # Variant calls that were run for recompile checks, as short descriptions.
    variants: list[str] = field(default_factory=list)
    guess: bool = False
    # Per device: {"device", "outputs", "gradients", "ok", "max_abs"}: what equivalence compared.
    equivalence: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "path": self.path,
            "line": self.line,
            "kind": self.kind,
            "findings": [f.to_dict() for f in self.findings],
            "timings": [t.to_dict() for t in self.timings],
            "graph_count": self.graph_count,
            "break_count": self.break_count,
            "recompile_count": self.recompile_count,
            "input_shapes": list(self.input_shapes),
            "environment": dict(self.environment),
            "content_hash": self.content_hash,
            "measured_at": self.measured_at,
            "checks": list(self.checks),
            "variants": list(self.variants),
            "guess": self.guess,
            "equivalence": [dict(e) for e in self.equivalence],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TargetReport:
        return cls(
            target=d["target"],
            path=d["path"],
            line=int(d["line"]),
            kind=d.get("kind", "example"),
            findings=[Finding.from_dict(f) for f in d.get("findings", [])],
            timings=[DeviceTiming.from_dict(t) for t in d.get("timings", [])],
            graph_count=int(d.get("graph_count", 0)),
            break_count=int(d.get("break_count", 0)),
            recompile_count=int(d.get("recompile_count", 0)),
            input_shapes=list(d.get("input_shapes", [])),
            environment=dict(d.get("environment", {})),
            content_hash=d.get("content_hash", ""),
            measured_at=float(d.get("measured_at", 0.0)),
            checks=list(d.get("checks", [])),
            variants=list(d.get("variants", [])),
            guess=bool(d.get("guess", False)),
            equivalence=[dict(e) for e in d.get("equivalence", [])],
        )


def dedupe(findings: list[Finding]) -> list[Finding]:
    """Drop repeats of the same site, keeping the first (most severe first)."""
    seen: set[tuple[str, str, int, int, str, str | None]] = set()
    out: list[Finding] = []
    for f in sorted(findings, key=lambda f: -f.severity.rank):
        k = f.key()
        if k not in seen:
            seen.add(k)
            out.append(f)
    return sorted(out, key=lambda f: (f.path, f.line, f.column, -f.severity.rank))
