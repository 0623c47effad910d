"""What differs between two eager runs of the same original (a timer's reading kept in an
attribute, a printed timing): verification (verify.py) does not blame a rewrite for it."""

from __future__ import annotations

from .effects import Effects, Unstable
from .fingerprint import changed as fingerprints_differ
from .usercode import Target
from .verifyruns import Run, run_eager


class RunNoise:
    """What differs between two eager runs of the original from the same state and seed (a
    timer's reading kept in an attribute, a printed timing): no difference a rewrite could be
    blamed for. Run only when asked, once per input. ``passed``: the inputs a rewrite of the
    calls passes differently (a number as a tensor): what they hold after is theirs."""

    def __init__(self, original: Target, grads: bool, passed: set[str]) -> None:
        self._original, self._grads, self._passed = original, grads, passed
        self._known: dict[int, tuple[set[str], Unstable]] = {}

    def _of(self, r: Run) -> tuple[set[str], Unstable]:
        if id(r) not in self._known:
            again = run_eager(
                self._original,
                r.call,
                r.how,
                self._grads,
                r.start or {},
                may_raise=True,
                seed=r.seed,
            )
            self._known[id(r)] = (
                set(fingerprints_differ(again.state, r.state)),
                r.effects.unstable(again.effects),
            )
        return self._known[id(r)]

    def __call__(self, r: Run) -> set[str]:
        """The state (``fingerprint``'s names) that differs from run to run."""
        return self._of(r)[0] | self._passed

    def channels(self, r: Run) -> Unstable:
        """Where the effects (``Effects.channels``) differ from run to run."""
        return self._of(r)[1]


def effects_differ(mine: Effects, r: Run, how: str, noise: RunNoise) -> list[str]:
    """``mine`` against the original's run ``r``; records that differ between two runs of the
    original are not compared (Effects.differences)."""
    diffs = mine.differences(r.effects, how)
    return mine.differences(r.effects, how, noise.channels(r)) if diffs else []
