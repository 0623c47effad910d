"""``error`` findings: what user code did wrong, placed at the most useful line.

Used by the worker for exceptions and by the parent for deaths it observes (segfaults, hangs,
``os._exit``, memory blow-ups), whose stacks come from faulthandler's dump.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Sequence

from ..findings import Finding, Frame, Kind, Severity
from .locate import Workspace, expression_span, frame_at, source_line

_FAULT_FRAME_RE = re.compile(r'^\s*File "(?P<path>.+)", line (?P<line>\d+) in (?P<name>\S+)')


def error_at(
    path: str,
    line: int,
    message: str,
    *,
    explanation: str = "",
    hints: Sequence[str] = (),
    stack: Sequence[Frame] = (),
    target: str | None = None,
    device: str | None = None,
    column: int | None = None,
    end_column: int | None = None,
) -> Finding:
    line = max(line, 1)
    span = expression_span(path, line)
    col = column if column is not None else span.column
    end_col = end_column if end_column is not None else span.end_column
    end_line = span.end_line if column is None else line
    if end_line == line and end_col <= col:
        end_col = col + 1
    return Finding(
        kind=Kind.ERROR,
        severity=Severity.ERROR,
        path=path,
        line=line,
        column=col,
        end_line=end_line,
        end_column=end_col,
        message=message,
        explanation=explanation,
        hints=list(hints),
        stack=list(stack),
        target=target,
        device=device,
    )


def frames_from_traceback(
    tb: traceback.StackSummary | list[traceback.FrameSummary], ws: Workspace | None = None
) -> list[Frame]:
    """Frames with ranges; with ``ws``, frames outside it get no AST range (cheap)."""
    out = []
    for fs in tb:
        if not fs.filename or fs.lineno is None:
            continue
        colno = getattr(fs, "colno", None)
        end_colno = getattr(fs, "end_colno", None)
        end_lineno = getattr(fs, "end_lineno", None) or fs.lineno
        if colno is not None and end_colno is not None and end_lineno == fs.lineno:
            out.append(
                Frame(
                    fs.filename,
                    fs.lineno,
                    fs.name,
                    colno + 1,
                    fs.lineno,
                    end_colno + 1,
                    (fs.line or "").strip(),
                )
            )
        elif ws is not None:
            out.append(ws.frame(fs.filename, fs.lineno, fs.name))
        else:
            out.append(frame_at(fs.filename, fs.lineno, fs.name))
    return out


def safe_str(exc: BaseException) -> str:
    """``str(exc)`` for user exceptions, whose ``__str__`` may itself raise."""
    try:
        return str(exc)
    except Exception as inner:
        return f"<its message could not be printed: {type(inner).__name__}>"


def error_from_exception(
    exc: BaseException,
    ws: Workspace,
    fallback_path: str,
    fallback_line: int,
    *,
    what: str,
    target: str | None = None,
    device: str | None = None,
) -> Finding:
    """One finding for an exception raised by user code while doing ``what``."""
    name = type(exc).__name__
    text = safe_str(exc)
    detail = text.strip().splitlines()[0] if text.strip() else ""
    message = f"{what} raised {name}" + (f": {detail}" if detail else "")
    if len(message) > 240:
        message = message[:237] + "..."
    try:
        explanation = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    except Exception:  # a user exception whose __str__ raises
        explanation = f"{name}: {text}"
    if isinstance(exc, SyntaxError) and exc.filename and ws.contains(exc.filename):
        line = exc.lineno or 1
        col = exc.offset or 1
        end = getattr(exc, "end_offset", None) or col + 1
        end_line = getattr(exc, "end_lineno", None) or line
        return error_at(
            exc.filename,
            line,
            f"{name}: {exc.msg}",
            explanation=explanation,
            target=target,
            column=col,
            end_column=end if end_line == line else None,
        )
    frames = frames_from_traceback(traceback.extract_tb(exc.__traceback__))
    user = ws.user_frames(frames)
    hints: list[str] = []
    if isinstance(exc, ModuleNotFoundError):
        hints.append(f"Install '{exc.name}' in the interpreter the worker runs, or fix the import.")
    if user:
        deepest = user[-1]
        return error_at(
            deepest.path,
            deepest.line,
            message,
            explanation=explanation,
            hints=hints,
            stack=user,
            target=target,
            device=device,
            column=deepest.column or None,
            end_column=deepest.end_column or None,
        )
    return error_at(
        fallback_path,
        fallback_line,
        message,
        explanation=explanation,
        hints=hints,
        target=target,
        device=device,
    )


def frames_from_fault_dump(text: str) -> list[Frame]:
    """faulthandler's dump of the current thread, outermost first (it prints innermost first)."""
    frames: list[Frame] = []
    block: list[Frame] = []
    in_current = False
    for raw in text.splitlines():
        if raw.startswith(("Current thread", "Thread 0x", "Stack (most recent")):
            # The current thread's stack is the one that matters; fall back to the first block.
            if block and not frames:
                frames = block
            block = []
            in_current = raw.startswith(("Current thread", "Stack (most recent"))
            continue
        m = _FAULT_FRAME_RE.match(raw)
        if m:
            block.append(Frame(m["path"], int(m["line"]), m["name"]))
        elif in_current and block and not raw.strip():
            frames = block
            in_current = False
    if block and (in_current or not frames):
        frames = block
    return list(reversed(frames))


def error_from_death(
    dump: str,
    ws: Workspace,
    fallback_path: str,
    fallback_line: int,
    message: str,
    *,
    explanation: str = "",
    hints: Sequence[str] = (),
    target: str | None = None,
) -> Finding:
    frames = [
        frame_at(f.path, f.line, f.name) for f in ws.user_frames(frames_from_fault_dump(dump))
    ]
    if frames:
        deepest = frames[-1]
        code = source_line(deepest.path, deepest.line).strip()
        return error_at(
            deepest.path,
            deepest.line,
            message,
            explanation=explanation + (f"\nLast user line: {code}" if code else ""),
            hints=hints,
            stack=frames,
            target=target,
        )
    return error_at(
        fallback_path,
        fallback_line,
        message,
        explanation=explanation,
        hints=hints,
        target=target,
    )
