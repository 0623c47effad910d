"""What a call shows a caller besides its value: the text it prints, the log records it emits and
the warnings it raises. A rewrite that computes the same tensors but drops a warning, or prints
only in eager, changes what the user sees; verification compares these as it compares outputs.

Torch's own records (its loggers, warnings raised from its package while it compiles) are not
the user's code speaking and are left out: a compiled run would otherwise differ from an eager
one by torch's own chatter."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import sys
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

_TORCH_DIR = os.path.realpath(os.path.dirname(torch.__file__)) + os.sep


# By channel, the positions of the records two runs of the same code differ in, each with
# whether they differ only in their numbers (a timing in a line of words), or None where they
# hold different numbers of records (Effects.unstable).
Unstable = dict[str, dict[int, bool] | None]

# A number as text: an int, a decimal, an exponent, a sign.
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def numbers_masked(text: str) -> str:
    """``text`` with every number in it one mark: what a record that differs between two runs
    only in a number it shows (a timing, a timestamp) must still equal."""
    return _NUMBER.sub("#", text)


@dataclass
class Effects:
    printed: str = ""  # what went to stdout and stderr
    logs: list[str] = field(default_factory=list)  # "logger LEVEL: message", in order
    warned: list[str] = field(default_factory=list)  # "Category: message", in order

    def channels(self) -> dict[str, list[str]]:
        return {
            "log records": self.logs,
            "warnings": self.warned,
            "printed lines": self.printed.splitlines(),
        }

    def unstable(self, again: Effects) -> Unstable:
        """Where two runs of the same code from the same state differ (a printed timing), by
        channel: the positions of the records that differ, or None where the two hold
        different numbers of records (only how many is compared there then)."""
        mine, theirs = self.channels(), again.channels()
        out: Unstable = {}
        for k, records in mine.items():
            if records == theirs[k]:
                continue
            if len(records) != len(theirs[k]):
                out[k] = None
            else:
                out[k] = {
                    i: numbers_masked(a) == numbers_masked(b)
                    for i, (a, b) in enumerate(zip(records, theirs[k], strict=True))
                    if a != b
                }
        return out

    def differences(
        self, original: Effects, how: str, unstable: Unstable | None = None
    ) -> list[str]:
        """What a caller would see differently from ``original``, in words. Where a channel is
        ``unstable``, a record at a position that differs between two runs of the original is
        compared with its numbers masked where only its numbers differed there (a timing must
        not hide the words beside it), and not at all where more did; the others are compared
        whole (one printed timing must not hide the line beside it)."""
        out = []
        theirs = original.channels()
        noisy = unstable or {}
        for what, mine in self.channels().items():
            if what not in noisy:
                same = mine == theirs[what]
            elif (at := noisy[what]) is None:
                same = len(mine) == len(theirs[what])
            else:
                same = len(mine) == len(theirs[what]) and all(
                    a == b or (i in at and (not at[i] or numbers_masked(a) == numbers_masked(b)))
                    for i, (a, b) in enumerate(zip(mine, theirs[what], strict=True))
                )
            if not same:
                out.append(
                    f"{how}: {what}: {_said(mine)} where the original shows {_said(theirs[what])}"
                )
        return out


def _said(items: list[str]) -> str:
    if not items:
        return "none"
    first = items[0].strip().replace("\n", " ")[:60]
    return f"{len(items)} ({first!r}{', …' if len(items) > 1 else ''})"


def _torch_logger(name: str) -> bool:
    return name == "torch" or name.startswith("torch.")


@contextlib.contextmanager
def observing() -> Iterator[Effects]:
    """While open, the prints, log records and warnings of the code that runs are collected
    into the ``Effects`` yielded (and not shown). Every warning is recorded each time it is
    raised (the "default" filter would show a repeat once per place, and the second run compared
    would see none), and a logger's once-only methods (transformers' ``warning_once``, an
    ``lru_cache`` on ``logging.Logger``) start afresh, for the same reason."""
    eff = Effects()
    _clear_once_caches()
    buffer = io.StringIO()
    original_call_handlers = logging.Logger.callHandlers

    def call_handlers(self: logging.Logger, record: logging.LogRecord) -> None:
        # Every record a logger decided to emit, whatever handlers (or none) it reaches;
        # torch's own go on to their handlers (the worker reads its breaks from them).
        if _torch_logger(record.name):
            original_call_handlers(self, record)
        else:
            eff.logs.append(f"{record.name} {record.levelname}: {_message(record)}")

    caught: list[tuple[warnings.WarningMessage, bool]] = []

    # Not traced when a warning comes out of a compiled call's eager part: a frame of ours
    # would be a break of ours in what torch reports.
    @torch._dynamo.disable
    def record(msg: warnings.WarningMessage) -> None:
        caught.append((msg, _torch_issued()))

    with warnings.catch_warnings():  # restores the filters and how warnings are shown
        warnings.simplefilter("always")
        # A ``showwarning`` the user's code installed (``logging.captureWarnings``) would
        # take the warnings past the recorder: the default one, restored on the way out.
        warnings.showwarning = warnings._showwarning_orig  # type: ignore[attr-defined]
        warnings._showwarnmsg_impl = record  # type: ignore[attr-defined]
        logging.Logger.callHandlers = call_handlers  # type: ignore[method-assign]
        try:
            with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
                yield eff
        finally:
            logging.Logger.callHandlers = original_call_handlers  # type: ignore[method-assign]
            eff.printed = buffer.getvalue()
            # Torch's own: raised by torch's code and shown as torch's. A user's warning with
            # ``stacklevel=2`` in ``forward`` is shown as nn.Module's call (a torch file) and is
            # still the user's: one a rewrite drops must be seen.
            eff.warned = [
                f"{w.category.__name__}: {w.message}"
                for w, by_torch in caught
                if not (by_torch and os.path.realpath(w.filename).startswith(_TORCH_DIR))
            ]
    _clear_once_caches()


def _torch_issued() -> bool:
    """Whether the code that called ``warnings.warn`` is torch's: the first frame above the
    warnings machinery (which called the recorder), whatever ``stacklevel`` names; a warning
    from C++ (``TORCH_WARN``) counts as raised by the Python code that called into it."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") != "warnings":
        frame = frame.f_back  # the recorder's own frames, up to the warnings machinery
    while frame is not None and frame.f_globals.get("__name__") == "warnings":
        frame = frame.f_back
    return frame is not None and os.path.realpath(frame.f_code.co_filename).startswith(_TORCH_DIR)


def _message(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception as exc:  # a bad format string: the user's logging would say so too
        return f"<unformattable: {type(exc).__name__}>"


def _clear_once_caches() -> None:
    for name in dir(logging.Logger):
        method: Any = getattr(logging.Logger, name, None)
        clear = getattr(method, "cache_clear", None)
        if callable(clear):
            clear()
    sys.stdout.flush()
