"""The steady-time check of a recompile's fix times each version under its own settings: a fix
that is a setting (made while the shadow imports) must not be timed against an original that
compiles with it too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from dynamo_lens.texts.locate import Workspace
from dynamo_lens.worker import settings, steadytime, torchcompat
from dynamo_lens.worker.compiledseries import compiled_series
from dynamo_lens.worker.usercode import Call, Target


def original(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def fixed(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def test_each_version_compiles_and_runs_under_its_own_settings() -> None:
    seen: list[tuple[str, bool]] = []

    def recording(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        code = next(n.meta.get("stack_trace", "") for n in gm.graph.nodes if n.op != "placeholder")
        who = "fixed" if "in fixed" in code else "original"
        seen.append((who, bool(torch._dynamo.config.capture_scalar_outputs)))
        return gm.forward

    calls = [Call((torch.ones(3),), {})]
    t0 = Target("o", original, calls, __file__, 14, "example")
    t1 = Target("f", fixed, calls, __file__, 18, "example")
    torch._dynamo.reset()
    before = settings.save()  # the original's: the setting off
    with torch._dynamo.config.patch(capture_scalar_outputs=True):  # the fix's, as a shadow sets
        got = steadytime.measure(t0, t1, recording, False, rounds=3, original_settings=before)
        # The fix's settings are in place again afterwards.
        assert torch._dynamo.config.capture_scalar_outputs
    torch._dynamo.reset()
    assert ("original", False) in seen and ("fixed", True) in seen, seen
    assert ("original", True) not in seen and ("fixed", False) not in seen, seen
    assert got.rounds == 3 and got.ratio > 0


def slow(x: torch.Tensor) -> torch.Tensor:
    for _ in range(200):
        x = x * 1.0001
    return x


def test_a_fix_clearly_slower_is_refused_without_a_second_look() -> None:
    calls = [Call((torch.ones(64),), {})]
    t0 = Target("o", original, calls, __file__, 14, "example")
    t1 = Target("f", slow, calls, __file__, 42, "example")
    torch._dynamo.reset()
    got = steadytime.measure(t0, t1, "eager", False, rounds=5)
    torch._dynamo.reset()
    # Far beyond any spread: judged on the first rounds, and said.
    assert not got.ok and got.ratio > 1 + steadytime.MAX_SLOWER and got.rounds == 5, got
    assert got.said().startswith("steady time ")


class Counting(torch.nn.Module):
    """An int attribute a call moves and reads: torch compiles again on every call until its
    recompile limit, then runs the module uncompiled."""

    def __init__(self) -> None:
        super().__init__()
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return x * self.step


def test_an_original_torch_gave_up_on_is_timed_settled_and_said_so() -> None:
    calls = [Call((torch.ones(4),), {})]
    t0 = Target("o", Counting(), calls, __file__, 60, "example")
    t1 = Target("f", original, calls, __file__, 14, "example")
    torch._dynamo.reset()
    with torch._dynamo.config.patch(recompile_limit=2):
        got = steadytime.measure(t0, t1, "eager", False, rounds=3)
    torch._dynamo.reset()
    # Timed once settled (uncompiled, past the limit), and the title says what it is against.
    assert got.gave_up and got.ok, got
    assert got.said().endswith("which torch runs uncompiled once it reaches its recompile limit")


def test_versions_their_series_compiled_are_timed_warm_and_a_give_up_there_is_kept(
    tmp_path: Path,
) -> None:
    """Verification times the compiles its series made (the fix's, then the original's, which
    leaves the fix's warm): nothing compiles again while timing, and an original torch gave
    up on in its series is timed as the uncompiled one it is."""
    calls = [Call((torch.ones(4),), {})]
    t0 = Target("o", Counting(), calls, __file__, 60, "example")
    t1 = Target("f", original, calls, __file__, 14, "example")
    ws = Workspace(tmp_path)
    torch._dynamo.reset()
    with torch._dynamo.config.patch(recompile_limit=2):
        fix = compiled_series(t1, [(calls[0], None, 0)] * 2, "eager", False, ws, "t", None, True)
        orig = compiled_series(
            t0, [(calls[0], None, 0)] * 4, "eager", False, ws, "t", None, keep=True, fresh=False
        )
        assert orig.gave_up and not fix.gave_up, (orig, fix)
        seen = len(torchcompat.compilation_metrics())
        got = steadytime.measure(
            t0,
            t1,
            "eager",
            False,
            rounds=3,
            fixed_compiled=fix.compiled,
            original_compiled=orig.compiled,
            original_gave_up=orig.gave_up,
        )
        assert len(torchcompat.compilation_metrics()) == seen, "compiled again while timing"
    torch._dynamo.reset()
    assert got.gave_up and got.ok, got
