"""The one data type that flows worker -> cache -> diagnostics, CLI and SARIF.

Everything here is plain data: dataclasses that cattrs turns into msgpack- and JSON-safe dicts
and back (``to_wire``/``from_wire``), so the worker, the cache and every output format share it
without reshaping. Lines and columns are 1-based; ``end_column`` is exclusive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple, TypedDict, TypeVar

import cattrs

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
    SKIPPED = "skipped"  # a file Dynamo Lens did not analyse (over the size limit)
    # Compiled code that silently runs eagerly (a skipped frame, a disabled call, a frame torch
    # failed to compile) or compiles cold every time (a cache bypass).
    FALLBACK = "fallback"


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
    # In a notebook (``path`` an .ipynb): the cell, 1-based among all its cells, markdown
    # counted; ``line`` is then inside that cell.
    cell: int | None = None
    # In a live kernel: the cell by its execution count (``In [n]``); ``line`` is inside it.
    execution_count: int | None = None

    def span(self) -> tuple[int, int, int, int]:
        """(line, column, end line, end column), 1-based, end exclusive: the frame's
        expression, else the start of its line."""
        column = self.column or 1
        return self.line, column, self.end_line or self.line, self.end_column or column + 1


class _MarkDynamicDim(TypedDict):
    variable: str
    dim: int


class MarkDynamic(_MarkDynamicDim, total=False):
    arg: int  # the variable's position in the target's calls, where it is positional
    keyword: str  # else its name, where every call passes it by keyword
    path: list[Any]  # the keys (str or int) inside that argument (a batch dict) to the tensor
    # Other sizes that vary across the same calls ({"arg" or "keyword", "dim"}): marked with
    # it, as torch would otherwise specialise the first on its equality with them.
    also: list[dict[str, Any]]
    # Which entries of the example's returned list are this target's calls (absent: the
    # example returns one call): the fix marks those and no other target's.
    calls: list[int]


class _ScalarArgVariable(TypedDict):
    variable: str


class ScalarArg(_ScalarArgVariable, total=False):
    """A Python number of the target's own that torch specialised on, passed by position (or
    by keyword) in every one of its calls: a fix may pass it as a 0-d tensor
    (fixes/dynamic.py)."""

    arg: int  # its position in the target's calls
    keyword: str  # else its name, where every call passes it by keyword

    calls: list[int]  # the example's entries that are this target's (absent: one call)


class FixData(TypedDict, total=False):
    """A rewrite for a graph break (fixes/catalogue.py): whole lines ``start``..``end`` of
    ``path`` replaced by ``text``; ``verified`` None when nobody ran it (``check --fixes
    propose``), else the worker's verdict, with its checks."""

    rule: str
    title: str
    path: str
    start: int
    end: int
    text: str
    verified: bool | None
    checks: list[dict[str, Any]]
    why: str
    # What verified means for it: "equivalent", "equal on N inputs covering both paths" or
    # "equal on the example only: ..." (never written by ``fix --apply``).
    claim: str


class FindingData(TypedDict, total=False):
    """Analysis-specific facts beside the message, by the kind of finding that sets them."""

    # graph_break, fallback
    gb_type: str
    fallback: str  # skipped | loop | disabled | failed | cache-bypass | cudagraphs
    count: int  # times torch reported this site (one finding per site)
    library: str  # where in a library torch broke or guarded: "torch/nn/functional.py:12"
    # recompile
    guard: str
    guard_kind: str
    variable: str
    recompiles: int
    values: list[Any]
    limit_hit: bool
    source: str  # "variants" | "probes"
    mark_dynamic: MarkDynamic
    scalar_arg: ScalarArg
    # mismatch
    differences: list[dict[str, Any]]
    gradients_compared: bool
    backend: str
    # static_hint (the Reconciler's identity of the function it sits in)
    rule: str
    likely: bool
    function: str
    target: str
    targets: list[str]
    in_loop: bool
    guessed_target: bool
    function_start: int
    function_digest: str
    # graph_break, with check --fixes
    fixes: list[FixData]
    # error: the target whose analysis job was stopped ("" before any began; engine/partial.py)
    stopped: str
    # any kind
    guess: bool  # from a zero-config guess
    stale: bool  # its line was edited since the analysis


class TargetId(NamedTuple):
    """A target: ``models/cnn.py::compile_example[0]`` is file ``models/cnn.py`` (relative to
    the workspace), unit ``compile_example``, variant 0 (None: the unit itself)."""

    file: str
    unit: str
    variant: int | None = None

    @classmethod
    def parse(cls, text: str) -> TargetId:
        file, sep, rest = text.rpartition("::")
        if not sep:
            file, rest = "", text
        unit, bracket, tail = rest.partition("[")
        variant = int(tail.rstrip("]")) if bracket and tail.rstrip("]").isdigit() else None
        return cls(file, unit, variant)

    @property
    def short(self) -> str:
        """What follows ``::``: the unit and its index."""
        return self.unit if self.variant is None else f"{self.unit}[{self.variant}]"

    def __str__(self) -> str:
        return f"{self.file}::{self.short}" if self.file else self.short


# A finding's site: path, line, and what tells one finding on a line from another (the break's
# type, torch's ``gb_type``; "recompile" for a recompile; the kind's name otherwise). The one
# identity dedupe, verification, fixing and verdicts compare (``Finding.site``).
SiteId = tuple[str, int, str]
RECOMPILE_SITE = "recompile"


def site_code(kind: Kind | str, gb_type: object) -> str:
    """The third part of a site: from a finding, or from a diagnostic's ``data`` (its kind
    and ``gb_type``), which is all the editor sends back."""
    k = Kind(kind)
    if k is Kind.RECOMPILE:
        return RECOMPILE_SITE
    if k in (Kind.GRAPH_BREAK, Kind.FALLBACK):
        return str(gb_type or "")
    return k.value


# The site, then what else tells two reports of it apart: kind (a break, or the frame torch
# then skipped), column, message, device and (notebook cell, kernel execution count).
SiteKey = tuple[SiteId, str, int, str, str | None, tuple[int, int]]


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
    data: FindingData = field(default_factory=lambda: FindingData())
    # Shown after the message, set where the finding is made: its provenance (a guess) or why
    # it is unconfirmed (Restricted Mode). The message itself is never rewritten.
    note: str = ""
    # Stable identity across line moves and reformatting (report/fingerprint.py), set where
    # findings are reported against a baseline: JSON, SARIF, ``diff``.
    fingerprint: str = ""
    # Against a baseline (report/baseline.py): "known" or "new"; "" when there is none.
    baseline: str = ""
    # In a notebook: the cell (1-based among all cells, markdown counted); ``line`` and
    # ``column`` are inside it. None for a file.
    cell: int | None = None
    # Seen in a live kernel (kernel/): the cell's execution count, the ``In [n]``.
    execution_count: int | None = None

    def __post_init__(self) -> None:
        # Every renderer (LSP, SARIF) needs start <= end; a range made from a multi-line
        # expression's parts can come out inverted. Collapse it onto its start.
        self.line = max(self.line, 1)
        self.column = max(self.column, 1)
        if (self.end_line, self.end_column) < (self.line, self.column):
            self.end_line, self.end_column = self.line, self.column + 1

    @classmethod
    def on(cls, at: Frame, kind: Kind, severity: Severity, message: str, **fields: Any) -> Finding:
        """A finding on ``at``'s range (its expression, else its line)."""
        line, column, end_line, end_column = at.span()
        return cls(kind, severity, at.path, line, column, end_line, end_column, message, **fields)

    @property
    def is_break(self) -> bool:
        """A graph break, including one after which torch runs the function eagerly."""
        return self.kind == Kind.GRAPH_BREAK or (self.kind == Kind.FALLBACK and bool(self.gb_id))

    def related(self) -> list[tuple[Frame, str]]:
        """The call chain beside the finding's own line, labelled for related locations:
        the callers above it, and below it the library frames down to where torch stopped."""
        own = next(
            (i for i, fr in enumerate(self.stack) if (fr.path, fr.line) == (self.path, self.line)),
            len(self.stack) - 1,
        )
        out = []
        for i, fr in enumerate(self.stack):
            if i < own:
                out.append((fr, f"called from {fr.name}" if fr.name else "called from here"))
            elif i > own:
                last = i == len(self.stack) - 1
                where = "torch stopped here" if self.is_break else "guarded here"
                out.append(
                    (
                        fr,
                        f"{where}, in {fr.name or 'library code'}"
                        if last
                        else f"then in {fr.name or 'library code'}",
                    )
                )
        return out

    @property
    def site(self) -> SiteId:
        """Where the finding is and what it is, as one value (``SiteId``)."""
        return (self.path, self.line, site_code(self.kind, self.data.get("gb_type")))

    def key(self) -> SiteKey:
        """Identity used to deduplicate the same site reported twice: the site, and what
        tells two reports there apart."""
        cell = (self.cell or 0, self.execution_count or 0)
        return (self.site, self.kind.value, self.column, self.message, self.device, cell)

    @property
    def text(self) -> str:
        """The message as shown: with its note (where it came from, why it is unconfirmed)."""
        return f"{self.message} ({self.note})" if self.note else self.message


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
    cell: int | None = None  # a target defined in a notebook's cell: ``line`` is in that cell


@dataclass(frozen=True)
class CellNote:
    """What a notebook's analysis says of one of its cells' lines (notebooks/program.py)."""

    cell: int  # 1-based among all cells
    line: int  # inside the cell, 1-based
    what: str


@dataclass
class NotebookRun:
    """How a notebook's cells ran as one program: how many there were, what ran but not as
    written (IPython syntax did nothing), and what did not run at all (a ``%%bash`` cell)."""

    cells: int
    code_cells: int
    notes: list[CellNote] = field(default_factory=list)
    left_out: list[CellNote] = field(default_factory=list)


@dataclass
class FileResult:
    """One file's analysis: its targets' reports plus file-level findings (syntax, imports)."""

    path: str
    content_hash: str
    reports: list[TargetReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    cancelled: bool = False
    ran: bool = False  # whether any user code ran
    # A job died, timed out or failed inside the engine: shown, never cached (a fresh try
    # after a restart may well succeed, and a dead worker may have blamed the wrong file).
    interrupted: bool = False
    duration: float = 0.0
    notebook: NotebookRun | None = None  # a notebook's: how its cells ran

    def all_findings(self) -> list[Finding]:
        out = list(self.findings)
        for r in self.reports:
            out.extend(r.findings)
        return out

    @property
    def stopped(self) -> bool:
        """An analysis job of it was stopped (its time or memory limit, a crash): its reports
        are what the checks that finished found, and running its calls again (the slower
        checks, verifying a rewrite) would stop the same way (engine/partial.py)."""
        return bool(self.stopped_targets)

    @property
    def stopped_targets(self) -> set[str]:
        """The targets whose analysis was stopped ("": before any target began)."""
        return {str(f.data["stopped"]) for f in self.findings if "stopped" in f.data}


_converter = cattrs.Converter()
# Enums go out as their plain values: msgpack and json need no knowledge of our types.
_converter.register_unstructure_hook_func(
    lambda t: isinstance(t, type) and issubclass(t, Enum), lambda e: e.value
)


def _without_none(cls: type, *names: str) -> None:
    """``cls`` goes out without ``names`` where they are None: a file's findings, frames and
    results carry no notebook fields (absent, not null)."""
    base = _converter.get_unstructure_hook(cls)

    def hook(obj: Any) -> Any:
        out = base(obj)
        for name in names:
            if out.get(name) is None:
                out.pop(name, None)
        return out

    _converter.register_unstructure_hook(cls, hook)


# Inner types first: a type's hook is built with its fields' hooks as they are at that moment.
_without_none(Frame, "cell", "execution_count")
_without_none(Finding, "cell", "execution_count")
_without_none(TargetReport, "cell")
_without_none(FileResult, "notebook")
T = TypeVar("T")


def to_wire(obj: Any) -> Any:
    """Plain dicts, lists and scalars (msgpack and JSON safe) for any type here."""
    return _converter.unstructure(obj)


def from_wire(data: Any, cls: type[T]) -> T:
    """The inverse of ``to_wire``; keys it does not know (a newer writer) are ignored."""
    return _converter.structure(data, cls)


def dedupe(findings: list[Finding]) -> list[Finding]:
    """Drop repeats of the same site, keeping the first (most severe first)."""
    seen: set[SiteKey] = set()
    out: list[Finding] = []
    for f in sorted(findings, key=lambda f: -f.severity.rank):
        k = f.key()
        if k not in seen:
            seen.add(k)
            out.append(f)
    return sorted(out, key=lambda f: (f.path, f.cell or 0, f.line, f.column, -f.severity.rank))
