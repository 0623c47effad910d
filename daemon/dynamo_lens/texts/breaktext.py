"""Torch's graph-break texts, read without torch: the type, explanation, hints and registry id
of a break message, the headline we show, and where a library line is.

The worker (with torch's own registry) and the readers of a run's trace (without torch) share
these, so a break reads the same wherever it was seen.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..findings import Finding, FindingData, Frame, Kind, Severity, gb_doc_url
from .locate import display_path

# Texts from traces made anywhere are read in linear time and within bounds: a line of torch's
# that no regex backtracks over, line numbers a source file can have.
MAX_LINE_CHARS = 4096
MAX_LINE_NO = 10_000_000
URL_RE = re.compile(r"/gb/gb(\d+)\.html")
# `  File "/path/model.py", line 12, in forward`: no quote inside the path, so no backtracking.
TB_FRAME_RE = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d{1,8}), in (?P<name>\S+)')
_SITE_AT = " in user code at "


def site(first_line: str) -> tuple[str, int] | None:
    """(path, line) of torch's own name for a break's site, the first line of each logged break
    (2.8 through 2.15): ``Graph break ... in user code at /path/model.py:12``."""
    head = first_line[:MAX_LINE_CHARS].strip()
    if not head.startswith("Graph break"):
        return None
    i = head.rfind(_SITE_AT)
    if i < 0:
        return None
    path, _, number = head[i + len(_SITE_AT) :].rpartition(":")
    if not path or not number.isdigit() or int(number) > MAX_LINE_NO:
        return None
    return path, int(number)


def traceback_frame(line: str) -> tuple[str, int, str] | None:
    """(path, line, function) of a ``File "...", line N, in f`` traceback line."""
    m = TB_FRAME_RE.match(line[:MAX_LINE_CHARS])
    if m is None or int(m["line"]) > MAX_LINE_NO:
        return None
    return m["path"], int(m["line"]), m["name"]


# The graph-break id table built from torch 2.15's registry (scripts/gb_registry.py).
_TABLE = Path(__file__).resolve().parent / "data" / "gb_registry.json"


@functools.lru_cache(maxsize=1)
def shipped() -> tuple[dict[str, str], dict[str, str]]:
    """(gb_type -> id, legacy-wording prefix -> id) from the shipped table."""
    try:
        data = json.loads(_TABLE.read_text())
    except (OSError, ValueError):
        return {}, {}
    return dict(data.get("gb_type", {})), dict(data.get("legacy", {}))


def legacy_break(text: str, ids: Mapping[str, str]) -> tuple[str, str] | None:
    """(gb_type, id) for a break torch < 2.9 words in pre-registry text."""
    lowered = text.strip().lower()
    for prefix, gb_id in shipped()[1].items():
        if lowered.startswith(prefix.lower()):
            gb_type = next((t for t, i in ids.items() if i == gb_id), None)
            if gb_type:
                return gb_type, gb_id
    return None


@dataclass
class Parsed:
    gb_type: str
    explanation: str
    hints: list[str]
    gb_id: str | None
    # Where the code runs eagerly after this break: "skipped" (torch gave up on the whole
    # function), "loop" (a break in a loop makes torch skip the function), "disabled" (a call
    # into a torch.compiler.disable'd function), or None (torch resumes after the break).
    fallback: str | None = None


# torch 2.13+: the whole function is skipped when the break cannot be resumed from.
_SKIPPED = (
    "Failed to handle graph break gracefully. Skipping the function and falling back to eager."
)
_ENCOUNTERED = "Graph break encountered:"
_DISABLED_TYPE = "Skip calling `torch.compiler.disable()`d function"
_LOOP_ID = "GB7000"
_DISABLED_FN = re.compile(r"<function ([\w.<>]{1,200}) at 0x")
# Breaks whose reason torch states in its own internals (a fake-tensor implementation): the
# operator is what the user called, so it is named.
_OPERATOR = re.compile(r"Operator `(?P<op>aten\.[\w.]{1,100})`")
_SCALAR_OPS = {"aten._local_scalar_dense": ".item()", "aten.item": ".item()"}
# Hints torch writes for its own developers, and what a user can do instead.
_USER_HINTS = {
    "GB4347": "Iterate over a list or a tensor instead of this object, or move the loop out of "
    "the compiled code.",
}
_DEVELOPER_HINT = re.compile(
    r"VariableTracker|tp_iternext|Dynamo developers?|implement .* in Dynamo"
)


def says_skipped(text: str) -> bool:
    """Whether torch's text says it gave up on the whole function (2.13+)."""
    return _SKIPPED in text[:1000]


def parse_reason(
    text: str, gb_type: str | None = None, ids: Mapping[str, str] | None = None
) -> Parsed:
    """Split torch's formatted graph-break message into type, explanation and hints; ``ids``
    maps types to registry ids (default: the shipped table)."""
    ids = ids if ids is not None else shipped()[0]
    fallback: str | None = None
    if says_skipped(text):
        # The break that made torch give up on the function follows: it is the reason.
        fallback = "skipped"
        text = text.split(_ENCOUNTERED, 1)[1] if _ENCOUNTERED in text else text
    lines = text.splitlines()
    expl_idx = next((i for i, ln in enumerate(lines) if ln.startswith("  Explanation:")), None)
    if gb_type is None:
        if expl_idx is not None:
            before = [ln for ln in lines[:expl_idx] if ln.strip()]
            gb_type = before[-1].strip() if before else ""
        else:
            gb_type = next((ln.strip() for ln in lines if ln.strip()), "unknown reason")
    explanation = ""
    hints: list[str] = []
    if expl_idx is not None:
        current: list[str] | None = None
        expl: list[str] = []
        for ln in lines[expl_idx:]:
            if ln.startswith("  Explanation:"):
                current = expl
                current.append(ln.split(":", 1)[1].strip())
            elif ln.startswith("  Hint:"):
                hints.append(ln.split(":", 1)[1].strip())
                current = None
            elif ln.startswith("  Developer debug context:") or ln.startswith(" For more details"):
                break
            elif ln.startswith("    ") and ln.strip():
                if current is not None:
                    current.append(ln.strip())
                elif hints:
                    hints[-1] += " " + ln.strip()
            elif not ln.strip():
                current = None
        explanation = " ".join(expl)
    # torch < 2.13 puts its "Graph Break Reason:" prefix on the type's own line.
    gb_type = PREFIX_RE.sub("", gb_type).strip() or gb_type
    gb_id = ids.get(gb_type)
    if gb_id is None and (legacy := legacy_break(gb_type, ids)):
        # Older torch, older wording: the registry's name for it, torch's text as explanation.
        explanation = explanation or text.strip().splitlines()[0]
        gb_type, gb_id = legacy
    if gb_id is None:
        m = URL_RE.search(text[:65536])
        if m:
            gb_id = f"GB{m.group(1)}"
    if gb_type == _DISABLED_TYPE:
        fallback = "disabled"
    elif gb_id == _LOOP_ID or "graph breaks in loops are not supported" in gb_type:
        fallback = fallback or "loop"
    user = _USER_HINTS.get(gb_id or "")
    kept = [h for h in hints if not _DEVELOPER_HINT.search(h)]
    hints = ([user] if user else []) + kept
    return Parsed(gb_type, explanation, hints, gb_id, fallback)


def operator(parsed: Parsed) -> str | None:
    """The operator a data-dependent break is about (``aten.nonzero``, ``.item()``), which
    torch names only in its explanation; the user's code calls it, not torch's internals."""
    m = _OPERATOR.search(parsed.explanation[:4096])
    if m is None:
        return None
    op = m["op"].removesuffix(".default")
    return _SCALAR_OPS.get(op, op)


def disabled_function(parsed: Parsed) -> str | None:
    m = _DISABLED_FN.search(parsed.explanation[:4096])
    return m.group(1).rsplit(".", 1)[-1] if m else None


PREFIX_RE = re.compile(r"^(?:graph break reason|graph break)\s*:\s*", re.I)


def message(gb_type: str) -> str:
    text = PREFIX_RE.sub("", gb_type.strip()).rstrip(".") or "unknown reason"
    first = text.split(" ", 1)[0]
    # "Unsupported call" reads as a sentence; "TypeError when ..." names a class: keep it.
    if first[:1].isupper() and (len(first) == 1 or first[1:].islower()):
        text = text[0].lower() + text[1:]
    return f"Graph break: {text}"


def where(frame: Frame) -> str:
    """``torch/nn/modules/transformer.py:1245``: a library line as users know it."""
    return f"{display_path(frame.path)}:{frame.line}"


_FALLBACK_HINTS = {
    "skipped": "torch cannot resume after a graph break inside a try block or an active "
    "context manager (or in code it cannot split): move the break out of that block, or remove "
    "it (the break's own hint follows).",
    "loop": "Move the graph break out of the loop, or put the loop body in a function of its "
    "own: a break in a loop makes torch skip the whole function.",
    "disabled": "Nothing to do if that is intended. Otherwise remove `torch.compiler.disable` "
    "from it, or compile it on its own.",
}


def headline(parsed: Parsed, at: Frame) -> tuple[str, Kind, Severity]:
    """What the user reads first: the break, or where code silently runs eagerly because of
    it, and how bad that is."""
    what = message(parsed.gb_type).removeprefix("Graph break: ")
    op = operator(parsed)
    if op and op not in what:
        what += f" ({op})"
    fn = f"{at.name}()" if at.name and not at.name.startswith("<") else "this function"
    if parsed.fallback == "skipped":
        text = f"Falls back to eager: torch skipped {fn} after a graph break it cannot resume"
        return f"{text} from: {what}", Kind.FALLBACK, Severity.WARNING
    if parsed.fallback == "loop":
        text = f"Falls back to eager: a graph break in a loop makes torch skip {fn}: {what}"
        return text, Kind.FALLBACK, Severity.WARNING
    if parsed.fallback == "disabled":
        callee = disabled_function(parsed)
        callee = f"{callee}()" if callee else "a function"
        text = f"Runs eagerly: {callee} is torch.compiler.disable'd (the graph breaks around it)"
        return text, Kind.FALLBACK, Severity.INFORMATION
    return f"Graph break: {what}", Kind.GRAPH_BREAK, Severity.WARNING


def finding(
    at: Frame,
    parsed: Parsed,
    origin: Frame | None,
    stack: list[Frame],
    *,
    explanation: str | None = None,
    data: FindingData | None = None,
    target: str | None = None,
) -> Finding:
    """A graph break at ``at``, worded as torch explains it (or, where torch then runs the code
    eagerly, that fallback); ``origin``: the library frame where torch broke, named in the
    message (the user's line may hold no `.item()`). The worker's analysis and a run's trace
    both make theirs here."""
    message_text, kind, severity = headline(parsed, at)
    facts = FindingData(gb_type=parsed.gb_type)
    if parsed.fallback:
        facts["fallback"] = parsed.fallback
    facts.update(data or {})
    if origin is not None:
        message_text += f" in {where(origin)}"
        facts["library"] = where(origin)
    hints = list(parsed.hints)
    if parsed.fallback:
        hints.insert(0, _FALLBACK_HINTS[parsed.fallback])
    return Finding.on(
        at,
        kind,
        severity,
        message_text,
        explanation=parsed.explanation if explanation is None else explanation,
        hints=hints,
        gb_id=parsed.gb_id,
        doc_url=gb_doc_url(parsed.gb_id),
        stack=stack,
        target=target,
        data=facts,
    )
