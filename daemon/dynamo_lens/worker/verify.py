"""Is a rewrite a fix, in the user's own setting? Both versions of the target run here, the
original from the file and the rewrite from a shadow of it (shadow.py), and a rewrite is
verified only when torch shows all of these:

- ``break gone``: the break it was for no longer happens (for a recompile, ``fewer recompiles
  there``: torch's recompile check, the one that found it, finds fewer at its line or none,
  ``no new recompile site``: none anywhere the original had none, and ``fewer compiles``:
  torch compiles fewer frames for the same calls; where the example declares its variants,
  the check's answer for each version is read from the compiled series below, which makes
  those calls first, as the check does: one compile of each version instead of two);
- ``no new break``: every break left was there before, at its moved line (but torch skipping
  the function a rewrite that moves the boundary keeps out: boundarycheck.py);
- ``arms match`` (a rewrite that selects with ``torch.where``): both arms of each selection have
  one shape and dtype, and the condition one value, for every input size (fake tensors with
  symbolic sizes, selections.py) and on every input compared;
- ``outputs equal``: the rewritten target's eager outputs (and gradients, where it trains) equal
  the original's, with the original's weights and inputs and the same seed: bitwise for an exact
  rewrite, else within the dtype's tolerance; an input on which the original raises must make
  the rewrite raise. The inputs are the example's and, for a rewrite that removed a branch,
  inputs that take each of its paths (branchpaths.py): found, the claim is "equal on N inputs
  covering both paths"; not found, "equal on the example only", which ``fix --apply`` never
  writes;
- ``gradients equal`` (a plain function the example calls without gradients): the example's
  calls again with each floating input asking for its gradient, the gradients compared, None
  against zeros too (it may be called in training);
- ``same state``: after each of those calls, the weights, buffers, plain attributes, optimizers
  and torch's random generator hold what the original's left (no side effect moved, no extra
  random draw);
- ``same effects``: on each of those inputs, the rewrite prints, logs and warns what the
  original does, in eager, and where the original raised, the compiled rewrite raises the same
  exception (type and message) too (effects.py);
- ``compiled equal``: the compiled rewrite agrees with the original in eager, within tolerance,
  in its outputs, gradients, the buffers and attributes it leaves, and what it prints, logs and
  warns (a print or a warning a guard now skips), on the example and on the inputs that take
  each path; a recompile fix's compiled calls run in the grad mode the target runs in (an
  ``eval()`` model's without gradients, as its recompile check and its users run it: its
  gradients are compared in eager only);
- ``no break on later calls``: over the same calls as below, torch breaks neither at the site
  again nor anywhere the original did not (a rewrite can make a recompile break);
- ``no new recompile``: over the same calls (the first again, one with fresh values, each
  declared variant), torch recompiles no frame more often than it did for the original; for a
  rewrite that moves the compile boundary, ``no recompile per step`` (boundarycheck.py);
- ``no slower`` (a recompile's fix): compiled with the user's backend and warm, the fix's
  steady time over the same calls is no worse than the noise of the measure (steadytime.py);
  the title says the change;
- ``file unchanged``: the edited file still holds the bytes the rewrite was made for (the user
  may type while this runs).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import types
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..findings import RECOMPILE_SITE, Finding, SiteId
from ..fixes.catalogue import Rewrite, claim
from ..texts.locate import Workspace
from . import boundarycheck, lastcheck, modelstate, selections, settings, steadytime, torchcompat
from .breaks import anchor_of, find_breaks
from .compiledseries import Series, compiled_differences, compiled_series
from .equivalence import trains
from .latercalls import later_calls_differ
from .probecalls import runs_with_grad
from .rewritesites import at_site, break_keys, moved_to_rewrite
from .runnoise import RunNoise, effects_differ
from .shadow import import_shadowed, shadowed
from .usercode import Call, Target, import_file, purge_workspace_modules
from .verifyrecompiles import (
    RecompileCheck,
    Recompiled,
    recalled_lines,
    recompile_gone,
    recompile_lines,
    series_check,
)
from .verifyruns import (
    Run,
    again_in,
    clone,
    cover,
    differences,
    gradient_differences,
    numbers_put_back,
    other_numbers,
    outcome_differences,
    passed_differently,
    raises_compiled,
    run_eager,
    series_of,
    state_differences,
)


@dataclass
class Verdict:
    rewrite: Rewrite
    target: str
    verified: bool = False
    checks: list[dict[str, Any]] = field(default_factory=list)  # name, ok, detail
    # For a rewrite that removed a branch: "both" when inputs that take each of its paths were
    # compared, "example" when none took the other (equal on the example only); "" otherwise.
    paths: str = ""
    paths_detail: str = ""
    inputs: int = 0  # the inputs compared in eager
    timing: str = ""  # a recompile's fix: its steady time against the original's, as measured
    # Where "no new break" or "no new recompile site" failed: what the rewrite uncovered (a
    # break or a recompile torch met only once the first was gone), for a chained fix.
    uncovered: list[Finding] = field(default_factory=list)
    # Of the other break sites it was asked about (``also``), those the verified rewrite
    # removes too: their verdict would differ from this one in nothing but the site.
    gone: list[SiteId] = field(default_factory=list)

    @property
    def claim(self) -> str:
        """What equal outputs show, in the words a title uses (fixes.catalogue.claim)."""
        return claim(self.paths, self.inputs, self.timing)

    def add(self, name: str, ok: bool, detail: str = "") -> bool:
        self.checks.append({"name": name, "ok": ok, "detail": detail})
        return ok


# Backends that trace and run the graph as it is, generating no code: compiling with them costs
# what a trace costs (torch's own names; a backend given as a function is not known to be one).
_TRACING_ONLY = ("eager", "aot_eager")


def _stands_for_trace(r: Recompiled, how: RecompileCheck) -> bool:
    """Whether a recompile check that broke nowhere says the trace of its first call would
    break nowhere either: compiled as the trace compiles (``dynamic`` unset) and with
    gradients as the trace runs (the grad mode now: a path can read it)."""
    return how.dynamic is None and r.unbroken and r.grad == torch.is_grad_enabled()


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def verify(
    path: Path,
    pick: Callable[[types.ModuleType], Target],
    rewrite: Rewrite,
    site: SiteId,
    ws: Workspace,
    *,
    backend: Any,
    grads_mode: str,
    label: str,
    recompile_check: RecompileCheck | None = None,
    source: str | None = None,
    digest: str = "",
    bystander: bool = False,
    also: tuple[SiteId, ...] = (),
) -> Verdict:
    """The verdict on ``rewrite`` for the break at ``site`` (path, line, gb_type) that a target
    of ``path`` reported; ``pick`` finds that target in a module made from ``path``.
    ``source`` is the edited file's text the rewrite is for, ``digest`` the hash of its bytes:
    a file that holds other bytes while this runs (the user typed) gets no verdict. A
    ``bystander``, a target that did not report the break or recompile, must be left no
    worse."""
    v = Verdict(rewrite, label)
    edited = Path(rewrite.path)
    if source is None:
        source = edited.read_text(encoding="utf-8")
    if digest and _digest(edited) != digest:
        v.add("file unchanged", False, f"{edited.name} changed before it was verified")
        return v
    purge_workspace_modules(ws)
    original = pick(import_file(path, ws))
    state = modelstate.save(original.fn)
    calls = list(original.calls)
    grads = trains(original.fn, grads_mode, calls[0])
    for_recompile = site[2] == RECOMPILE_SITE
    # A recompile fix's compiled calls run as the target does and as its check ran (an
    # ``eval()`` model, which torch's ``training`` flag says does not train: without
    # gradients, where a rewrite may raise only), its gradients compared in eager only.
    cgrads = (
        grads and runs_with_grad(original.fn, calls[0])
        if for_recompile and grads_mode != "always"
        else grads
    )

    eager0 = [
        run_eager(original, c, "example", grads, state, may_raise=False, keep=i == 0)
        for i, c in enumerate(calls)
    ]
    extra: list[Run] = []
    if rewrite.branch:
        cov = cover(
            path,
            edited,
            source,
            rewrite.branch,
            pick,
            ws,
            state,
            calls,
            loop=rewrite.rule == "loop-exit",
            thorough=rewrite.selects,
        )
        # A check kept in the graph takes no path away, but it now raises where the graph runs,
        # not where the Python did (outside a caller's ``try``): only inputs that fail it show
        # that the compiled rewrite raises what and where the original did.
        v.paths = ("both" if cov.both else "example") if rewrite.selects else ""
        v.paths_detail = cov.detail
        for o in cov.extra:
            r = run_eager(
                original, o.call, o.how, grads, o.state or state, may_raise=True, seed=o.seed
            )
            r.compiled = o.compiled
            extra.append(r)
    v.inputs = len(calls) + len(extra)
    # The raw findings, as ``after`` below (not the check's reported ones: filtered, merged):
    # those the check just traced when this original is the one it traced, else traced now.
    # Anchored as the check's are: a break all inside a library shows at the target's call
    # site; in the rewrite, where that line moved (the shadow's text is not on disk to parse).
    anchor0 = anchor_of(original, ws)
    anchor1 = anchor0
    if anchor0 is not None and os.path.realpath(anchor0.path) == os.path.realpath(edited):
        moved_to = rewrite.new_line(anchor0.line)
        anchor1 = dataclasses.replace(anchor0, line=moved_to) if moved_to else None
    found0 = lastcheck.recall(str(path), original.name, calls[0], ws)
    rc_how = recompile_check or RecompileCheck(None, 8, 4)
    # Compiled as the check compiles (``dynamic`` unset, its recompile limit, its grad mode),
    # each version's compiled series makes the check's calls, the declared variants, first:
    # the check's answer is read from them (series_check), one compile of each version, not
    # two. A check that probed (no variants declared), or ran in another grad mode than the
    # series (gradients asked for always), runs as before.
    merged = (
        for_recompile
        and rc_how.dynamic is None
        and len(calls) >= 2
        and runs_with_grad(original.fn, calls[0]) == cgrads
        and getattr(torch._dynamo.config, torchcompat.recompile_limit_name()) == rc_how.limit
    )
    series = series_of(calls, variants_first=merged)
    recompiled0: Recompiled | None = None
    if for_recompile:
        modelstate.load(original.fn, state)
        if not merged:
            recompiled0 = recompile_lines(original, ws, rc_how, label, anchor0, str(path))
        elif found0 is None and cgrads == torch.is_grad_enabled():  # else it can't stand for
            recompiled0 = recalled_lines(original, ws, rc_how, str(path))  # the trace (below)
        if recompiled0 and found0 is None and _stands_for_trace(recompiled0, rc_how):
            # Its first call, compiled as the trace would (static, then as torch decides, with
            # gradients as now), broke nowhere and no frame was skipped: the trace would find
            # nothing.
            found0 = []
    outside = settings.save()  # torch's settings for the original: a shadow's import sets its own
    traced: list[list[Finding]] = [found0] if found0 is not None else []

    def before() -> Counter[SiteId]:
        """The original's breaks, traced when first needed (only where the rewrite breaks at
        all), under the original's own settings."""
        if not traced:
            with settings.under(outside):
                modelstate.load(original.fn, state)
                traced.append(
                    find_breaks(original.fn, clone(calls[0]), ws, label, anchor0).findings
                )
        return break_keys(traced[0])

    originals = [*eager0, *extra]
    # The rule's own selections, checked in a text of their own (selections.py).
    problems = selections.arms(path, edited, source, rewrite, pick, ws, originals, grads)

    with shadowed(edited, rewrite.apply(source), ws):
        fixed = pick(import_shadowed(path, edited, ws))
        # A rewrite of the example's calls runs on the calls it builds; any other on the
        # original's (the same values: the example is seeded).
        mine = list(fixed.calls) if rewrite.edits_calls else calls
        if len(mine) != len(calls):
            v.add(
                "calls still run", False, f"the example returns {len(mine)} calls, not {len(calls)}"
            )
            return v
        paths = [r for r in extra if not r.raised and r.compiled]
        checked = len(calls)  # the calls the recompile check makes: first in a merged series
        series = [*series, *((r.call, r.start, r.seed) for r in paths)]
        mine_series = series_of(mine, merged) if rewrite.edits_calls else series
        timed = for_recompile and not bystander  # its compile is timed below: kept warm

        def run_series() -> Series:
            modelstate.load(fixed.fn, state)
            return compiled_series(
                fixed,
                mine_series,
                backend,
                cgrads,
                ws,
                label,
                anchor1,
                keep=timed,
                upto=checked if merged else 0,
            )

        fixed_series: Series | None = None
        orig_series: Series | None = None

        def original_series(keep: bool, upto: int = 0) -> Series:
            # Under the original's settings. Kept compiled for the timing, torch's caches are
            # not emptied first either: the fix's compile stays warm beside it.
            with settings.under(outside):
                modelstate.load(original.fn, state)
                return compiled_series(
                    original, series, backend, cgrads, ws, label, anchor0, keep, not keep, upto
                )

        def trace_rewrite() -> list[Finding]:
            modelstate.load(fixed.fn, state)
            return find_breaks(fixed.fn, clone(mine[0]), ws, label, anchor1).findings

        traced_first: list[Finding] | None = None
        if merged:
            if cgrads != torch.is_grad_enabled():
                # Not a trace's grad mode: the trace runs too, and first (it empties torch's
                # caches; the series' compiles stay warm for the timing below).
                traced_first = trace_rewrite()
                if traced_first:
                    before()
            fixed_series, recompiled1 = series_check(
                run_series, fixed, ws, rc_how, label, anchor1, cgrads
            )
            if fixed_series is None:
                v.add("calls still run", False, recompiled1.error)
                return v

            # Torch's caches kept where the fix is timed below (its compile stays warm); the
            # original's compile is timed too.
            orig_series, recompiled0 = series_check(
                lambda: original_series(keep=timed, upto=checked),
                original,
                ws,
                rc_how,
                label,
                anchor0,
                cgrads,
            )
        elif for_recompile:
            modelstate.load(fixed.fn, state)
            recompiled1 = recompile_lines(fixed, ws, rc_how, label, anchor1)
        if for_recompile:
            assert recompiled0 is not None  # run where not merged, read from a series where so
            gone, v.uncovered = recompile_gone(
                v.add, site, rewrite, edited, recompiled0, recompiled1, source, bystander
            )
            if not gone:
                return v

        after: list[Finding]
        if traced_first is not None:
            after = traced_first
        elif for_recompile and _stands_for_trace(recompiled1, rc_how):
            # As for the original: a recompile check that broke nowhere is the trace's answer.
            after = []
        elif fixed_series is not None and cgrads == torch.is_grad_enabled():
            after = fixed_series.first_breaks  # as below: the series stands for the trace
        elif backend in _TRACING_ONLY and cgrads == torch.is_grad_enabled():
            # A backend that generates no code compiles as cheaply as a trace: the compiled
            # calls run first (their checks still wait for the eager ones below), their first
            # call's compiles the rewrite's trace. With one that generates code, the trace
            # first: a rewrite that keeps its break is refused before it is compiled.
            try:
                fixed_series = run_series()
                after = fixed_series.first_breaks
            except Exception:
                # Its error is said where the series runs again below, after the trace has
                # decided the breaks: a rewrite that adds a break gets that verdict, and the
                # break it uncovered goes to a chained fix (engine/fixing.py).
                fixed_series = None
                after = trace_rewrite()
        else:
            after = trace_rewrite()
        if not for_recompile:
            gone = not any(at_site(f, site, rewrite) for f in after)
            if not v.add("break gone", gone, "" if gone else "torch still breaks at the rewrite"):
                return v
        broke = break_keys(after)
        moved = moved_to_rewrite(before() if broke else Counter(), rewrite, edited) + break_keys(
            boundarycheck.at_boundary(after, rewrite)
        )
        added = broke - moved
        detail = ", ".join(f"{os.path.basename(p)}:{ln} {gb}" for p, ln, gb in list(added)[:3])
        if not v.add("no new break", not added, detail):
            v.uncovered = [f for f in after if (os.path.realpath(f.path), *f.site[1:]) in added]
            return v
        if rewrite.checked and not v.add("arms match", not problems, next(iter(problems), "")):
            return v
        runs = [
            run_eager(
                fixed,
                mine[i] if i < len(mine) else r.call,
                r.how,
                grads,
                r.start or state,
                may_raise=bool(r.raised),
                seed=r.seed,
            )
            for i, r in enumerate(originals)
        ]
        diffs = [
            d
            for r1, r0 in zip(runs, originals, strict=True)
            for d in differences(r1, r0, exact=rewrite.exact, grads=grads)
        ]
        how = "bitwise" if rewrite.exact else "within the dtype's tolerance"
        inputs = "; ".join(r.how for r in originals)
        if not v.add("outputs equal", not diffs, diffs[0] if diffs else f"{how}: {inputs}"):
            return v
        if not grads and not isinstance(original.fn, torch.nn.Module):
            odd, n = gradient_differences(original, fixed, calls, mine, state, exact=rewrite.exact)
            if n and not v.add("gradients equal", not odd, odd[0] if odd else f"{n} call(s)"):
                return v
        # A number passed as a tensor instead: equal on the example's values is not enough.
        other = other_numbers(calls, mine) if rewrite.edits_calls else []
        # A rewrite of the calls passes some inputs differently (a number as a tensor): what
        # those hold after the call is theirs, not a side effect of the rewrite.
        passed = passed_differently(calls, mine) if rewrite.edits_calls else set()
        if passed and not other:  # passed differently where no other value can be tried
            v.add("other numbers equal", False, f"no other values tried for {sorted(passed)[0]}")
            return v
        odd = [
            d
            for a, b, said in other
            for d in outcome_differences(
                run_eager(fixed, b, said, grads, state, may_raise=True),
                run_eager(original, a, said, grads, state, may_raise=True),
                exact=rewrite.exact,
                grads=grads,
            )
        ]
        if other and not v.add(
            "other numbers equal", not odd, odd[0] if odd else f"{len(other)} other values"
        ):
            return v
        noise = RunNoise(original, grads, passed)
        left = [
            d
            for r1, r0 in zip(runs, originals, strict=True)
            for d in state_differences(r1, r0, noise)
        ]
        if not v.add("same state", not left, left[0] if left else ""):
            return v
        shown = [
            d
            for r1, r0 in zip(runs, originals, strict=True)
            for d in effects_differ(r1.effects, r0, r0.how, noise)
        ]
        raising = [r for r in extra if r.raised and r.compiled]
        refs = [eager0[0], *paths, *raising]  # what the compiled calls are compared with
        if cgrads != grads:  # in their grad mode: a forward may read it
            refs, noise = (
                again_in(original, refs, cgrads, state),
                RunNoise(original, cgrads, passed),
            )
        shown += raises_compiled(fixed, original, refs[1 + len(paths) :], backend, cgrads, state)
        if not v.add("same effects", not shown, shown[0] if shown else ""):
            return v
        if fixed_series is None:
            fixed_series = run_series()
        diffs_c = compiled_differences(
            fixed_series, refs[0], refs[1 : 1 + len(paths)], cgrads, noise, rewrite
        )
        if not diffs_c:
            # The later calls too (the first again, the declared variants a recompile's fix
            # compiles dynamically), against the original in eager over the same calls. Where
            # the rewrite passes a number as a 0-d tensor, its fresh values are drawn apart:
            # the original gets the rewrite's, the number put back (else no call from there).
            core = series[: len(calls) + 2]
            upto = len(core)
            if rewrite.edits_calls:
                at = len(calls) + 1 if merged else 2
                back = numbers_put_back(mine_series[at][0], core[at][0])
                core[at] = (back or core[at][0], None, 0)
                upto = upto if back is not None else at
            diffs_c = later_calls_differ(
                fixed_series, original, core, cgrads, state, upto, rewrite.skips
            )
        if not v.add("compiled equal", not diffs_c, diffs_c[0] if diffs_c else ""):
            return v
        if timed:
            # Fewer frames, but no slower once warm: measured with the user's backend, last
            # (the calls it runs are the example's own, which a model may write into). Not a
            # bystander's: two equal versions timed side by side differ by noise now and then.
            # The fix's compile is the one its calls above made (torch's caches kept), the
            # original's that of its own series, run now: the recompiles "no new recompile"
            # compares below, and one compile of the original instead of two. Under the
            # original's settings, and torch's caches not emptied first: the fix stays warm.
            if orig_series is None:
                orig_series = original_series(keep=True)
            steady = steadytime.measure(
                original,
                fixed,
                backend,
                cgrads,
                fixed_compiled=fixed_series.compiled,
                original_settings=outside,
                original_compiled=orig_series.compiled,
                original_gave_up=orig_series.gave_up,
            )
            v.timing = steady.said()
            if not v.add("no slower", steady.ok, f"{v.timing}, over {steady.rounds} rounds"):
                return v
    # Later calls: the site must not break again, and no other break may appear that the
    # original's same calls did not show (their series runs only when needed).
    again = [f for f in fixed_series.breaks if at_site(f, site, rewrite)]
    later = set(break_keys(fixed_series.breaks))
    if later and not broke:  # the original's breaks, not needed until now
        moved += moved_to_rewrite(before(), rewrite, edited)
    later -= set(moved)
    # The original's recompiles over the series are at least its recompile check's over the
    # declared calls, compiled as the series compiles (``dynamic`` unset): the same calls in
    # order, after calls of the first one's shapes, and a backend only adds guards.
    floor = (
        recompiled0.recompiles
        if recompiled0 is not None
        and len(calls) >= 2
        and rc_how.dynamic is None
        and recompiled0.grad == cgrads  # a path can read the grad mode
        # The check counts up to its own limit; the series stops at torch's (a file can set it)
        and getattr(torch._dynamo.config, torchcompat.recompile_limit_name()) == rc_how.limit
        and not recompiled0.error
        else -1
    )
    if orig_series is None and (later or fixed_series.recompiles > max(floor, 0)):
        modelstate.load(original.fn, state)
        orig_series = compiled_series(original, series, backend, cgrads, ws, label, anchor0)
    if orig_series is not None:
        later -= set(moved_to_rewrite(break_keys(orig_series.breaks), rewrite, edited))
    detail = (
        f"torch breaks at the rewrite again on a later call (line {again[0].line})"
        if again
        else ", ".join(f"{os.path.basename(p)}:{ln} {gb}" for p, ln, gb in sorted(later)[:3])
    )
    if not v.add("no break on later calls", not again and not later, detail):
        return v
    if rewrite.moves_boundary:  # the original's loop frame, skipped whole, never recompiled

        def compiled(c: Call) -> Series:
            modelstate.load(fixed.fn, state)
            pair: list[tuple[Call, Any, int]] = [(mine[0], None, 0), (c, None, 0)]
            return compiled_series(fixed, pair, backend, cgrads, ws, label, anchor1)

        args = (fixed_series, mine[0], rewrite, compiled, original, state)
        # A bystander need not run the function the rewrite keeps out: nothing of it compiled
        # there says nothing about the steps.
        ok, detail = boundarycheck.steps_settle(*args, require_compiled=not bystander)
        if not v.add("no recompile per step", ok, detail):
            return v
    else:
        recompiles1 = fixed_series.recompiles
        recompiles0 = orig_series.recompiles if orig_series is not None else max(floor, 0)
        least = "at least " if orig_series is None and floor > 0 else ""
        detail = (
            f"{recompiles1} recompile(s) over {len(series)} calls, original {least}{recompiles0}"
        )
        if not v.add("no new recompile", recompiles1 <= recompiles0, detail):
            return v
    # The verdict holds for the bytes it was given: a file that changed while it ran has none.
    if digest:
        same = _digest(edited) == digest
        if not v.add("file unchanged", same, "" if same else "it changed while verifying"):
            return v
    v.verified = True
    still = [*after, *fixed_series.breaks]
    v.gone = [s for s in also if not any(at_site(f, s, rewrite) for f in still)]
    return v
