"""Results of units that an edit cannot have changed, reused instead of run again.

A unit's result is kept under the key of what it can reach (``static.reach``), with where each
definition it reached sat. After an edit, a unit whose key is unchanged gets its result back,
its lines moved with the definitions they are in. A file whose bytes did not change and whose
units all hit needs no worker at all (an edit in a helper that only another target reaches).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..findings import Finding, Frame, TargetReport
from ..static.reach import Reach, Span
from ..wire import Unit

# Units kept; a workspace has a few hundred at most.
MAX_UNITS = 1024


@dataclass
class UnitResult:
    reach: Reach
    reports: list[TargetReport]
    findings: list[Finding]


@dataclass
class Units:
    """What a file's discovery found, for a file whose bytes have not changed since."""

    units: list[Unit]
    imports: list[str]


class Memo:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._units: OrderedDict[tuple[Any, ...], UnitResult] = OrderedDict()
        self._files: OrderedDict[tuple[Any, ...], Units] = OrderedDict()
        # Per unit, the last result of each of its targets by the target's key (a unit whose
        # example returns several models: worker/targetkeys.py).
        self._targets: OrderedDict[tuple[Any, ...], dict[str, UnitResult]] = OrderedDict()

    def target_keys(self, unit: tuple[Any, ...]) -> list[str]:
        with self._lock:
            return list(self._targets.get(unit, {}))

    def target(self, unit: tuple[Any, ...], reach: Reach) -> UnitResult | None:
        """A target's last result under the same key, moved to where its definitions are now."""
        with self._lock:
            got = self._targets.get(unit, {}).get(reach.key)
        return None if got is None else moved(got, reach.spans)

    def put_targets(self, unit: tuple[Any, ...], results: dict[str, UnitResult]) -> None:
        """The unit's targets as they are now (the results of older versions go)."""
        with self._lock:
            self._targets[unit] = results
            self._targets.move_to_end(unit)
            while len(self._targets) > MAX_UNITS:
                self._targets.popitem(last=False)

    def unit(self, key: tuple[Any, ...], reach: Reach) -> UnitResult | None:
        """The unit's last result if it reached the same code, moved to where it is now."""
        with self._lock:
            got = self._units.get(key)
            if got is not None:
                self._units.move_to_end(key)
        if got is None or got.reach.key != reach.key:
            return None
        return moved(got, reach.spans)

    def put_unit(self, key: tuple[Any, ...], result: UnitResult) -> None:
        with self._lock:
            self._units[key] = result
            self._units.move_to_end(key)
            while len(self._units) > MAX_UNITS:
                self._units.popitem(last=False)

    def file(self, key: tuple[Any, ...]) -> Units | None:
        with self._lock:
            return self._files.get(key)

    def put_file(self, key: tuple[Any, ...], units: Units) -> None:
        with self._lock:
            self._files[key] = units
            while len(self._files) > MAX_UNITS:
                self._files.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._units.clear()
            self._files.clear()
            self._targets.clear()


class _Shift:
    """Old line -> new line, by the reached definition the old line is in."""

    def __init__(self, old: Sequence[Span], new: Sequence[Span]) -> None:
        now = {(s.path, s.name): s.start for s in new}
        self.spans = [(s.path, s.start, s.end, now[(s.path, s.name)] - s.start) for s in old]
        self.paths = {s.path for s in old}
        self.lost = False  # a line of a reached file outside every reached definition

    def line(self, path: str, line: int) -> int:
        if path not in self.paths:
            return line  # a library, or a workspace file the unit does not reach
        for p, start, end, delta in self.spans:
            if p == path and start <= line <= end:
                return line + delta
        if any(delta for p, _, _, delta in self.spans if p == path):
            self.lost = True  # its definitions moved, and this line is in none of them
        return line

    def frame(self, fr: Frame) -> Frame:
        new = self.line(fr.path, fr.line)
        if new == fr.line:
            return fr
        return replace(fr, line=new, end_line=fr.end_line + (new - fr.line) if fr.end_line else 0)

    def finding(self, f: Finding) -> Finding:
        line = self.line(f.path, f.line)
        return replace(
            f,
            line=line,
            end_line=f.end_line + (line - f.line),
            stack=[self.frame(fr) for fr in f.stack],
        )


def moved(result: UnitResult, now: Sequence[Span]) -> UnitResult | None:
    """``result`` with its lines where its definitions are ``now``; None if a line cannot be
    placed (then the unit runs again)."""
    shift = _Shift(result.reach.spans, now)
    if all(d == 0 for *_, d in shift.spans):
        return result
    reports = [
        replace(
            r,
            line=shift.line(r.path, r.line),
            findings=[shift.finding(f) for f in r.findings],
        )
        for r in result.reports
    ]
    findings = [shift.finding(f) for f in result.findings]
    if shift.lost:
        return None
    reach = replace(result.reach, spans=list(now))
    return UnitResult(reach, reports, findings)
