"""Where a run's compiled code silently ran eagerly, or compiled cold every time, read from the
trace: frames torch skipped after a break it could not resume from, frames it failed to
compile, compiled-graph caches it bypassed, CUDA graphs it did not use.

torch records these in ``compilation_metrics`` (``fail_type``, ``fail_user_frame_*``,
``cudagraph_skip_reason``) and in cache artifacts (``aotautograd_cache_bypass``,
``fx_graph_cache_bypass``, with their reason); a break that made torch skip the function is
also a break record, which the break reader words the same way (``texts.breaktext``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from ..findings import Finding, FindingData, Frame, Kind, Severity
from ..texts import breaktext
from ..texts.locate import Workspace, frame_at
from .functions import CompiledFunctions, CompileId
from .tracelog import Record, line_number

# The cache artifacts torch writes when it does not use a cache, and what each cache is.
_BYPASS = {
    "aotautograd_cache_bypass": "AOTAutograd's cache",
    "fx_graph_cache_bypass": "Inductor's FX graph cache",
}
_ADDRESS = re.compile(r" at 0x[0-9a-f]{1,16}")
CACHE_EVENTS = (
    "fx_graph_cache_hit",
    "fx_graph_cache_miss",
    "aotautograd_cache_hit",
    "aotautograd_cache_miss",
)
# The artifacts the run reader reads (extract.py); the rest it passes over.
READ_ARTIFACTS = frozenset({"dynamo_graph_break_reason", "torch_version", *_BYPASS, *CACHE_EVENTS})

_BYPASS_HINTS = {
    "autocast": "AOTAutograd's cache does not cover autocast (pytorch#191106): move "
    "`torch.autocast` outside the compiled function, or cast the inputs and weights to the "
    "dtype you want instead.",
}
_CUDAGRAPH_HINT = (
    "Keep the compiled region free of what CUDA graphs cannot replay (CPU tensors, mutated "
    "inputs, dynamic shapes, ops that sync with the host), or accept this part running "
    "without CUDA graphs."
)


@dataclass
class FallbackSite:
    finding: Finding
    count: int = 0
    ranks: set[int] = field(default_factory=set)
    compiles: Counter[CompileId] = field(default_factory=Counter)


class Fallbacks:
    def __init__(
        self,
        ws: Workspace,
        frame: Callable[[str, int, str], Frame],
        functions: CompiledFunctions,
        local: Callable[[str], str],
    ) -> None:
        self.ws, self._frame, self.functions, self._local = ws, frame, functions, local
        self.sites: dict[tuple[object, ...], FallbackSite] = {}
        self._pending: list[tuple[Record, str, str]] = []  # bypasses before their frame's stats

    def _at(self, rec: Record, path: str, line: int, name: str) -> Frame | None:
        """The user's line: the one torch names if it is the workspace's, else the user's call
        of the library frame, else nothing (another project's frame)."""
        if path and self.ws.contains(path):
            return frame_at(path, line, name)
        return self.functions.caller(rec)

    def _add(self, key: tuple[object, ...], rec: Record, make: Callable[[], Finding]) -> None:
        s = self.sites.get(key)
        if s is None:
            s = self.sites[key] = FallbackSite(make())
        s.count += 1
        if rec.rank is not None:
            s.ranks.add(rec.rank)
        s.compiles[rec.compile] += 1

    def metrics(self, rec: Record, co: str) -> None:
        m = rec.body
        fail_type = str(m.get("fail_type") or "")
        name = str(m.get("co_name") or "")
        if fail_type == "Unsupported":
            # A break torch could not resume from (in a try block, an active context manager,
            # a loop on newer torch): the whole function runs eagerly.
            path = self._local(str(m.get("fail_user_frame_filename") or "")) or co
            line = line_number(m.get("fail_user_frame_lineno") or m.get("co_firstlineno"))
            at = self._at(rec, path, line, name)
            if at is not None:
                parsed = breaktext.parse_reason(str(m.get("fail_reason") or "unknown reason"))
                parsed.fallback = parsed.fallback or "skipped"
                if parsed.fallback == "loop":
                    parsed.fallback = "skipped"  # torch says it skipped; the loop is its cause
                origin = self._frame(path, line, name) if not self.ws.contains(path) else None
                stack = [at, origin] if origin else [at]
                make = partial(breaktext.finding, at, parsed, origin, stack)
                self._add(("skipped", at.path, at.line), rec, make)
        elif fail_type:
            # An error while tracing or in the backend, not a break: eager from then on.
            fail = str(m.get("fail_reason") or "").strip()
            at = self._at(rec, co, line_number(m.get("co_firstlineno")), name)
            if at is not None:
                self._add(
                    ("failed", at.path, at.line, fail_type),
                    rec,
                    partial(_failed, at, fail_type, fail),
                )
        reason = str(m.get("cudagraph_skip_reason") or "").strip()
        if reason:
            line = line_number(m.get("co_firstlineno"))
            at = self._at(rec, co, line, name)
            if at is not None:
                self._add(("cudagraphs", at.path, at.line), rec, partial(_cudagraphs, at, reason))

    def artifact(self, rec: Record, name: str) -> None:
        """A cache bypass, hit or miss: its frame's metrics (which name the function) come
        later."""
        if name in _BYPASS:
            self._pending.append((rec, name, _bypass_reason(rec.payload)))
        elif name in CACHE_EVENTS:
            self._pending.append((rec, name, ""))

    def resolve(self) -> None:
        """Bypasses on the function whose compile they were in, once every frame is known."""
        for rec, name, reason in self._pending:
            st = self.functions.of(rec.compile)
            if st is None:
                continue
            if name in CACHE_EVENTS:
                st.cache[name] += 1
                continue
            at = frame_at(st.path, st.line, st.name)
            self._add(
                ("cache-bypass", at.path, at.line, name, reason),
                rec,
                partial(_bypass, at, name, reason, st.library),
            )
        self._pending.clear()


def _bypass_reason(payload: str | None) -> str:
    text = (payload or "").strip()
    try:
        data = json.loads(text) if text.startswith("{") else {}
    except ValueError:
        data = {}
    reason = data.get("cache_bypass_reason") or data.get("reason") if isinstance(data, dict) else ""
    first = str(reason or text or "no reason recorded").strip().splitlines()[0]
    # "<function _enter_autocast at 0x7f...>": the function, not where it sat in memory.
    return _ADDRESS.sub("", first)[:300].strip()


def _bypass(at: Frame, artifact: str, reason: str, library: Frame | None) -> Finding:
    cache = _BYPASS[artifact]
    hint = next(
        (h for key, h in _BYPASS_HINTS.items() if key in reason.lower()),
        "Every process compiles this function from scratch: remove what the reason names from "
        "the compiled region to make its compiled graph cacheable.",
    )
    data = FindingData(fallback="cache-bypass")
    own = ""
    if library is not None:
        own = f" in {breaktext.where(library)}"
        data["library"] = breaktext.where(library)
    return Finding.on(
        at,
        Kind.FALLBACK,
        Severity.INFORMATION,
        f"Compiles cold every time: {cache} bypassed{own}: {reason}",
        explanation=f"torch did not use {cache} for this function's graph ({artifact}), so "
        "each new process pays its full compile time.",
        hints=[hint],
        stack=[at, *([library] if library else [])],
        data=data,
    )


def _failed(at: Frame, fail_type: str, fail: str) -> Finding:
    first = fail.splitlines()[0][:200] if fail else fail_type
    fn = f"{at.name}()" if at.name and not at.name.startswith("<") else "this function"
    return Finding.on(
        at,
        Kind.FALLBACK,
        Severity.WARNING,
        f"Falls back to eager: torch.compile failed on {fn}: {fail_type}: {first}",
        explanation="torch could not compile the frame (an error while tracing it or in the "
        "backend, not a graph break): it runs eagerly from then on.",
        hints=[
            "torch logged the error instead of raising it: run once with "
            "`torch._dynamo.config.suppress_errors = False` to see all of it; "
            '`backend="aot_eager"` tells whether Dynamo or the backend failed.'
        ],
        stack=[at],
        data=FindingData(fallback="failed"),
    )


def _cudagraphs(at: Frame, reason: str) -> Finding:
    return Finding.on(
        at,
        Kind.FALLBACK,
        Severity.WARNING,
        f"Runs without CUDA graphs: {reason.splitlines()[0][:300]}",
        explanation="mode='reduce-overhead' asked for CUDA graphs; torch skipped them for this "
        "graph, which then launches each kernel from Python.",
        hints=[_CUDAGRAPH_HINT],
        stack=[at],
        data=FindingData(fallback="cudagraphs"),
    )
