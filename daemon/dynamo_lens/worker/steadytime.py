"""Is a recompile's fix no slower once warm? A dynamic dimension, a tensor instead of a Python
number or a setting compiles fewer frames, but the graph it compiles can run slower (a dynamic
kernel, a guard on a symbol). Both versions are compiled with the user's backend, warmed (every
call once, twice), then timed side by side: rounds of every call, the original's and the fix's
in alternating order, each side's time in a round the fastest of ``REPEATS`` (interference only
ever adds time), each round's pair a ratio. The fix passes when the median ratio is no worse
than the spread of the ratios (their interquartile range, at least ``MIN_NOISE``), and never
more than ``MAX_SLOWER`` slower however noisy the machine: a difference the machine's own noise
could make is not held against it, a clear slowdown is. A fix that comes out slower by less
than ``MAX_SLOWER`` but by more than the spread gets a second, longer look (as many rounds,
each block repeating the calls for at least ``LONG_BLOCK``), which decides. The measured
change goes into the fix's title.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from . import settings, torchcompat
from .usercode import Call, Target

ROUNDS = 9
REPEATS = 3
MIN_NOISE = 0.05  # a spread below 5% is not measured here: shared machines vary by that much
MAX_SLOWER = 0.2  # however noisy: a fix 1.2x slower than the original is not "no slower"
LONG_BLOCK = 0.002  # seconds: the second look's shortest timed block
_SETTLE_PASSES = 12  # past torch's default recompile limit (8) with every call once a pass


@dataclass(frozen=True)
class SteadyTime:
    ratio: float  # the fix's steady time per round / the original's (median of the pairs)
    noise: float  # the spread of the paired ratios (IQR), at least MIN_NOISE
    rounds: int
    # torch gave up compiling the original at its recompile limit (a value that changes on
    # every call): its steady state is eager, and no graph of its own is there to compare.
    gave_up: bool = False

    @property
    def ok(self) -> bool:
        return self.gave_up or self.ratio - 1 <= min(self.noise, MAX_SLOWER)

    def said(self) -> str:
        said = f"steady time {self.ratio:.2f}× the original's (noise ±{self.noise:.0%})"
        if self.gave_up:
            said += ", which torch runs uncompiled once it reaches its recompile limit"
        return said


def _calls_of(fn: Any, calls: list[Call], grads: bool) -> Callable[[], None]:
    def every() -> None:
        with torch.set_grad_enabled(grads):
            for c in calls:
                fn(*c.args, **c.kwargs)
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    return every


def _settle(run: Callable[[], None]) -> bool:
    """Run every call until a pass compiles nothing more (a value that changes each call
    compiles again until torch's recompile limit): what is timed after is the steady state.
    Whether torch gave up at the limit on the way."""
    seen = len(torchcompat.compilation_metrics())
    first = seen
    for n in range(_SETTLE_PASSES):
        run()
        now = len(torchcompat.compilation_metrics())
        if n >= 1 and now == seen:
            break
        seen = now
    return any(
        torchcompat.hit_recompile_limit(m) for m in torchcompat.compilation_metrics()[first:]
    )


def _put(saved: settings.Saved | None) -> None:
    if saved is not None:
        settings.restore(saved)


def measure(
    original: Target,
    fixed: Target,
    backend: Any,
    grads: bool,
    rounds: int = ROUNDS,
    fixed_compiled: Any = None,
    original_settings: settings.Saved | None = None,
    original_compiled: Any = None,
    original_gave_up: bool = False,
) -> SteadyTime:
    """Each version over its own calls, as the recompile check made them (the user's tensors
    themselves, the fix's marks on them), compiled with ``backend``; run last, after
    every check of what the calls compute. ``fixed_compiled``: the fix already compiled with
    ``backend`` (by the calls that checked its outputs), warmed here as the original is;
    ``original_compiled`` the same of the original (by the calls that counted its recompiles),
    ``original_gave_up`` whether torch gave up on it at its recompile limit on those calls.
    ``original_settings``: torch's settings without the fix's (a fix that is a setting, made
    while its file imports): the original compiles and runs under them, the fix under the
    settings now, each put in place outside the timed calls."""
    now = settings.save()
    # Put in place only where they differ: putting back costs a millisecond, a small
    # target's whole call.
    differ = original_settings is not None and original_settings != now
    own = [original_settings if differ else None, now if differ else None]
    runs = []
    for t, given in ((original, original_compiled), (fixed, fixed_compiled)):
        compiled = given if given is not None else torch.compile(t.fn, backend=backend)
        runs.append(_calls_of(compiled, list(t.calls), grads))
    block: list[float] = []  # the original's fastest time for its calls, per round

    def look(n: int, number: int) -> SteadyTime:
        """``n`` rounds, each side timed as the fastest of ``REPEATS`` blocks of ``number``
        passes over its calls."""
        ratios: list[float] = []
        for r in range(n):
            took = [0.0, 0.0]
            order = (0, 1) if r % 2 == 0 else (1, 0)  # drift in the machine's load cancels
            for i in order:
                _put(own[i])
                best = float("inf")
                for _ in range(REPEATS):
                    t0 = time.perf_counter()
                    for _ in range(number):
                        runs[i]()
                    best = min(best, (time.perf_counter() - t0) / number)
                took[i] = best
            block.append(took[0])
            ratios.append(took[1] / max(took[0], 1e-9))
        q1, _, q3 = statistics.quantiles(ratios, n=4)
        return SteadyTime(statistics.median(ratios), max(q3 - q1, MIN_NOISE), n, gave_up)

    gave_up = original_gave_up
    try:
        for i, run in enumerate(runs):  # cold: the compiles; then warm, before timing
            _put(own[i])
            settled_uncompiled = _settle(run)
            if i == 0:  # the original's: a fix that gives up is the slower one, as timed
                gave_up = gave_up or settled_uncompiled
        got = look(rounds, 1)
        if not got.ok and got.ratio - 1 <= MAX_SLOWER:
            # Slower by less than the bound, but more than this spread: a verdict the
            # machine's noise flips from one run to the next is no verdict. A second, longer
            # look decides: as many rounds, each block long enough (``LONG_BLOCK``) that a
            # scheduler's tick no longer decides it.
            number = max(1, min(50, math.ceil(LONG_BLOCK / max(min(block), 1e-6))))
            got = look(rounds, number)
    finally:
        _put(own[1])
    return got
