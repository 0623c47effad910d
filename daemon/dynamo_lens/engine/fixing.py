"""Fixes for the breaks of an analysed file: the catalogue's rewrites (fixes/catalogue.py), each
verified by the worker against every target that reported the break (every target of the file,
for a module-wide setting)."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..findings import RECOMPILE_SITE, FileResult, Finding, FixData, Kind, SiteId, from_wire
from ..fixes.boundary import compile_arguments
from ..fixes.catalogue import FIXABLE, Rewrite, applicable, claim, propose
from ..fixes.rewrite import chained
from .analysis import Engine
from .cancel import CancelToken
from .filewrite import (
    FileChanged,
    Source,
    WriteError,
    read_source,
    replace_file,
    uninterrupted,
)
from .importers import importers
from .partial import STOPPED_WHY


@dataclass
class Fix:
    """One break and what the catalogue and the worker made of it."""

    finding: Finding
    targets: list[str]
    rewrite: Rewrite | None = None  # the verified one, else the first tried
    verified: bool = False
    checks: list[dict[str, Any]] = field(default_factory=list)  # the worker's, for ``rewrite``
    why: str = ""  # why nothing is offered as verified, in words
    seconds: float = 0.0  # spent verifying this break's rewrites: what the user waits for
    source: Source | None = None  # the file's text the rewrite was made and verified for
    paths: str = ""  # the verdict's: "both", "example" or "" (the rewrite took no path away)
    inputs: int = 0  # the inputs the verdict compared
    timing: str = ""  # a recompile's fix: its steady time against the original's
    # What the last rewrite tried uncovered (a break or a recompile torch met only once the
    # first was gone): the next link of a chained fix.
    uncovered: list[Finding] = field(default_factory=list)
    diff: str = ""  # of ``source`` by the rewrite
    # The file's other break sites its verified rewrite removes too, for every target verified.
    gone: list[SiteId] = field(default_factory=list)
    stale: bool = False  # the file changed after it was analysed or while it was verified
    # The other rewrites tried for this break and not kept: rule, the checks that failed and
    # why (a user asks why mark_dynamic was not the fix: 1.3x slower once warm).
    refused: list[dict[str, Any]] = field(default_factory=list)
    unreadable: bool = False  # its file cannot be read as source (``why`` says why)

    @property
    def site(self) -> SiteId:
        return self.finding.site

    # Other workspace files that import the file the rewrite edits (a helper module): their
    # targets were not verified with it, so ``--apply`` leaves it.
    shared: list[str] = field(default_factory=list)

    @property
    def applicable(self) -> bool:
        """Verified for every path, not only the example's, and for every target that runs
        the edited file: ``--apply`` writes only these."""
        return applicable({"verified": self.verified, "paths": self.paths, "shared": self.shared})

    @property
    def claim(self) -> str:
        return claim(self.paths, self.inputs, self.timing)


def _breaks(result: FileResult) -> list[Fix]:
    """Each distinct break (or recompile) of the file's reports, with the targets that reported
    it."""
    by_site: dict[SiteId, Fix] = {}
    for report in result.reports:
        for f in report.findings:
            if f.kind not in FIXABLE:
                continue
            fix = by_site.setdefault(f.site, Fix(f, []))
            if report.target not in fix.targets:
                fix.targets.append(report.target)
    return list(by_site.values())


def _label(engine: Engine, path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(engine.root))
    except ValueError:
        return path


def _compile_args(engine: Engine) -> str:
    """``torch.compile``'s arguments as the engine compiles targets, for a rule that writes a
    compile of its own."""
    c = engine.config
    return compile_arguments(c.backend, c.mode, c.dynamic)


def fixes_for(
    engine: Engine, result: FileResult, *, cancel: CancelToken | None = None
) -> list[Fix]:
    """A :class:`Fix` per break in ``result``; rewrites are verified one at a time, each
    against every target that reported its break (every target of the file for a module-wide
    setting), for the file's bytes as read here (the worker refuses a file that holds others
    meanwhile). The first that is verified for every path is kept; else the first verified on
    the example only; else the last tried."""
    out = []
    sources: dict[str, Source | WriteError] = {}
    # A verified rewrite that removes other breaks of the file too: their verdict, which would
    # differ in nothing but the site, by (rewrite, site), with the targets it was verified for.
    proven: dict[tuple[Any, ...], tuple[Fix, set[str]]] = {}
    for fix in _breaks(result):
        started = time.perf_counter()
        f = fix.finding
        if not engine.workspace.contains(f.path):
            fix.why = "the break is in a library: only the workspace's files are edited"
            out.append(fix)
            continue
        if f.path not in sources:
            try:
                sources[f.path] = read_source(f.path)
            except WriteError as exc:
                sources[f.path] = exc
        src = sources[f.path]
        if isinstance(src, WriteError):
            fix.why, fix.unreadable = str(src), True
            out.append(fix)
            continue
        if os.path.realpath(f.path) == os.path.realpath(result.path) and (
            src.digest != result.content_hash
        ):
            fix.why = f"{os.path.basename(f.path)} changed after it was analysed"
            fix.stale = True
            out.append(fix)
            continue
        rewrites = propose(f, src.text, True, _compile_args(engine))
        if not rewrites and "library" in f.data:
            fix.why = (
                f"torch breaks inside a library ({f.data['library']}): no file outside the "
                "workspace is edited, and no rewrite of this call matches"
            )
        elif not rewrites:
            fix.why = "no rewrite in the catalogue matches this code"
        every = [r.target for r in result.reports]
        shown = _proven(fix, rewrites, proven)
        if shown is not None:
            out.append(shown)
            continue
        fallback: Fix | None = None
        fallback_rw: Rewrite | None = None
        # Each rewrite tried and not kept, with what refused it (``Fix.refused``).
        tried: list[tuple[Rewrite, dict[str, Any]]] = []
        for rw in rewrites:
            fix.verified = _try(engine, result, fix, rw, src, every, cancel)
            if not fix.verified and fix.uncovered:
                fix.verified = _chain(engine, result, fix, rw, src, every, cancel)
            # Another file than the analysed one, or a boundary moved in it: the workspace's
            # other files that import it run it too, unverified.
            done = fix.rewrite or rw
            elsewhere = os.path.realpath(done.path) != os.path.realpath(result.path)
            if fix.verified and (elsewhere or done.moves_boundary):
                fix.shared = importers(
                    engine.root,
                    engine.config.excludes,
                    done.path,
                    (done.start, done.end),
                    skip=result.path,
                )
                if fix.shared:
                    fix.why = (
                        f"verified for {os.path.basename(result.path)}'s targets; "
                        f"{os.path.basename(done.path)} is imported by "
                        f"{', '.join(fix.shared[:3])} too, whose targets it was not verified "
                        "for: fix those files together"
                    )
            if fix.applicable:
                break
            if fix.verified and fallback is None:
                fallback, fallback_rw = dataclasses.replace(fix), rw
            failed = [c["name"] for c in fix.checks if not c["ok"]]
            tried.append((rw, {"rule": done.rule, "failed": failed, "why": fix.why}))
        else:
            reported = rewrites[-1] if rewrites else None  # the last tried, as it stands
            if fallback is not None:
                fix, reported = fallback, fallback_rw
            tried = [(r, said) for r, said in tried if r is not reported]
        fix.refused = [said for _, said in tried]
        fix.seconds = time.perf_counter() - started
        out.append(fix)
        if fix.verified and fix.rewrite is not None:
            covers = set(every if fix.rewrite.module_wide else fix.targets)
            for site in fix.gone:
                proven[(*_same(fix.rewrite), site)] = (fix, covers)
    return out


def _same(rw: Rewrite) -> tuple[Any, ...]:
    """What makes two proposals the same edit."""
    return (rw.rule, os.path.realpath(rw.path), rw.start, rw.end, rw.text)


def _proven(
    fix: Fix, rewrites: list[Rewrite], proven: dict[tuple[Any, ...], tuple[Fix, set[str]]]
) -> Fix | None:
    """``fix`` with the verdict of an earlier break's verified rewrite that removes this break
    too (the first such of ``rewrites``), for targets that include this break's; None where
    there is none. The time is the verification's: what the user waited for it."""
    for rw in rewrites:
        earlier, covers = proven.get((*_same(rw), fix.site), (None, set()))
        if earlier is None or not set(fix.targets) <= covers:
            continue
        line = earlier.site[1]
        checks = [
            {**c, "detail": f"with the break at line {line}, by the same edit"}
            if c["name"] == "break gone"
            else dict(c)
            for c in earlier.checks
        ]
        return dataclasses.replace(
            earlier, finding=fix.finding, targets=fix.targets, checks=checks, gone=[], refused=[]
        )
    return None


# A fix that uncovers the next break or recompile is extended by the catalogue's rewrite for
# it, and the whole verified again: at most this many rewrites in one chain.
CHAIN = 3


def _try(
    engine: Engine,
    result: FileResult,
    fix: Fix,
    rw: Rewrite,
    src: Source,
    every: list[str],
    cancel: CancelToken | None,
) -> bool:
    """``rw`` verified for ``fix``'s targets (every target of the file for a module-wide
    setting), its verdict kept in ``fix``."""
    fix.rewrite, fix.checks, fix.why, fix.source, fix.uncovered = rw, [], "", src, []
    fix.diff = rw.diff(src.text, _label(engine, rw.path))
    # A fix that edits the example's calls or the whole module reaches the file's other
    # targets too (a mark stays on a tensor another example also returns, a setting applies to
    # all): each must be left no worse, and only the targets that reported it must improve.
    others = [t for t in every if t not in fix.targets]
    widens = rw.module_wide or (rw.edits_calls and fix.site[2] == RECOMPILE_SITE)
    reach = others if widens else []
    return _verify(engine, result, fix, fix.targets, cancel) and _verify(
        engine, result, fix, reach, cancel, bystander=True
    )


def _chain(
    engine: Engine,
    result: FileResult,
    fix: Fix,
    rw: Rewrite,
    src: Source,
    every: list[str],
    cancel: CancelToken | None,
) -> bool:
    """``rw`` uncovered a break or a recompile (a size marked dynamic, and the scale that
    changed in the same calls recompiles next): the catalogue's rewrite for what it uncovered,
    proposed on the text ``rw`` leaves, joined to ``rw`` and verified as one, up to ``CHAIN``
    rewrites. ``fix`` keeps the first chain verified, else ``rw``'s own verdict."""
    own = (rw, fix.checks, fix.why, fix.diff, fix.uncovered)
    base, uncovered = rw, fix.uncovered
    for _ in range(CHAIN - 1):
        text = base.apply(src.text)
        links = [
            whole
            for u in uncovered
            if os.path.realpath(u.path) == os.path.realpath(base.path)
            for more in propose(u, text, True, _compile_args(engine))
            if (whole := chained(src.text, base, more)) is not None
        ]
        further: tuple[Rewrite, list[Finding]] | None = None
        for whole in links:
            if _try(engine, result, fix, whole, src, every, cancel):
                return True
            if fix.uncovered and further is None:
                further = (whole, fix.uncovered)
        if further is None:
            break
        base, uncovered = further
    fix.rewrite, fix.checks, fix.why, fix.diff, fix.uncovered = own
    return False


_STOPPED: dict[str, Any] = {
    "verified": False,
    "checks": [{"name": "runs", "ok": False, "detail": STOPPED_WHY}],
}


def _verify(
    engine: Engine,
    result: FileResult,
    fix: Fix,
    targets: list[str],
    cancel: CancelToken | None,
    *,
    bystander: bool = False,
) -> bool:
    """The worker's verdict on ``fix.rewrite`` for each of ``targets``, kept in ``fix`` (for
    ``bystander`` targets, only where one fails: the fix's checks and claim are its own
    targets')."""
    rw, src = fix.rewrite, fix.source
    assert rw is not None and src is not None
    paths: set[str] = set()
    # The file's other breaks: which of them the rewrite removes too, for every target.
    also = [] if bystander or fix.site[2] == RECOMPILE_SITE else _other_breaks(result, fix)
    if not bystander:
        fix.gone = also
    stopped = result.stopped_targets
    for target in targets:
        # A target whose analysis was stopped (a hang, a crash, its limits), or one of a file
        # stopped before any began: verifying runs its calls again, to the same end.
        verdict = (
            _STOPPED
            if stopped & {"", target}
            else engine.verify_rewrite(
                result.path,
                target,
                dataclasses.asdict(rw),
                fix.site,
                source=src.text,
                digest=src.digest,
                cancel=cancel,
                bystander=bystander,
                also=also,
            )
        )
        if isinstance(verdict, Finding):
            fix.checks = [{"name": "runs", "ok": False, "detail": verdict.message}]
        elif bystander:
            if verdict.get("verified"):
                continue
            fix.checks, fix.uncovered = list(verdict.get("checks", [])), []
        else:
            fix.checks = list(verdict.get("checks", []))
            paths.add(str(verdict.get("paths", "")))
            fix.inputs = max(fix.inputs, int(verdict.get("inputs", 0)))
            fix.timing = str(verdict.get("timing") or fix.timing)
            fix.uncovered = from_wire(verdict.get("uncovered") or [], list[Finding])
            gone = {tuple(g) for g in verdict.get("gone") or []}
            fix.gone = [g for g in fix.gone if g in gone]
        failed = [c for c in fix.checks if not c["ok"]]
        fix.stale = any(c["name"] == "file unchanged" for c in failed)
        if failed or isinstance(verdict, Finding) or not verdict.get("verified"):
            c = failed[0] if failed else (fix.checks or [{"name": "runs", "detail": ""}])[-1]
            fix.why = f"{target}{' (another target of the file)' * bystander}: " + (
                f"{c['name']} failed" + (f" ({c['detail']})" if c.get("detail") else "")
            )
            return False
    if bystander:
        return True
    # Over several targets, the weakest claim holds.
    fix.paths = "example" if "example" in paths else ("both" if "both" in paths else "")
    return True


def _other_breaks(result: FileResult, fix: Fix) -> list[SiteId]:
    """The file's break sites other than ``fix``'s."""
    return [b.site for b in _breaks(result) if b.site != fix.site and b.site[2] != RECOMPILE_SITE]


def _fix_data(fix: Fix, rw: Rewrite, verified: bool | None) -> FixData:
    data = FixData(
        rule=rw.rule,
        title=rw.title,
        path=rw.path,
        start=rw.start,
        end=rw.end,
        text=rw.replacement(fix.source.text) if fix.source else rw.text,
        verified=verified,
        checks=fix.checks,
        why=fix.why,
    )
    if verified:
        data["claim"] = fix.claim
    return data


def attach(engine: Engine, result: FileResult, *, verify: bool) -> None:
    """Puts each break's rewrites in its findings' ``data["fixes"]``: all the catalogue has,
    unverified; with ``verify``, the worker's verdict on them (the verified one, else the one
    tried, with the check that failed)."""
    by_site: dict[SiteId, list[FixData]] = {}
    if verify:
        for fix in fixes_for(engine, result):
            if fix.rewrite is not None:
                by_site[fix.site] = [_fix_data(fix, fix.rewrite, fix.verified)]
    for f in result.all_findings():
        if f.kind not in FIXABLE:
            continue
        site = f.site
        if site not in by_site and not verify and engine.workspace.contains(f.path):
            try:
                src = read_source(f.path)
            except WriteError:
                continue
            found = propose(f, src.text, True, _compile_args(engine))
            by_site[site] = [_fix_data(Fix(f, [], source=src), rw, None) for rw in found]
        if by_site.get(site):
            f.data["fixes"] = by_site[site]


@dataclass
class Applied:
    """What ``apply_verified`` did to one file."""

    applied: list[Fix] = field(default_factory=list)  # written, in order
    left: list[Fix] = field(default_factory=list)  # the breaks left, with why
    errors: list[str] = field(default_factory=list)  # why something was not written
    problems: list[Finding] = field(default_factory=list)  # the file could not be analysed


# How often a file that changed while its rewrite was verified is analysed and verified again
# before the rewrite is refused.
RETRIES = 2


def apply_verified(
    engine: Engine,
    path: str,
    limit: int = 50,
    checks: tuple[str, ...] = ("breaks", "recompiles"),
    *,
    on_write: Callable[[Fix], None] | None = None,
    before_rename: Callable[[], None] | None = None,
) -> Applied:
    """Writes the rewrites of ``path``'s breaks (and recompiles, with ``checks``) verified for
    every path, one at a time, analysing the file again after each (a verdict holds for the
    text it was given). Each write is atomic and only over the bytes that were verified
    (filewrite.replace_file); a file that changed meanwhile is analysed and verified again, up
    to ``RETRIES`` times, then left as the user has it."""
    done = Applied()
    changed = 0
    for _ in range(limit):
        result = engine.analyze_file(Path(path), list(checks))
        done.problems = [f for f in result.all_findings() if f.kind is Kind.ERROR]
        if done.problems:
            return done
        found = fixes_for(engine, result)
        ok = [x for x in found if x.applicable and x.rewrite is not None and x.source]
        if not ok and any(x.stale for x in found) and changed < RETRIES:
            changed += 1  # the user typed meanwhile: analyse and verify what the file holds now
            continue
        if not ok:
            done.left = found
            # Nothing written where something might have been: said as an error.
            done.errors += list(dict.fromkeys(x.why for x in found if x.unreadable))
            if any(x.stale for x in found):
                done.errors.append(
                    f"{path} kept changing while its fixes were verified ({RETRIES + 1} tries): "
                    "not written, your edits are kept"
                )
            return done
        fix = ok[0]
        assert fix.rewrite is not None and fix.source is not None
        try:
            with uninterrupted():  # written and recorded as written, together
                replace_file(
                    fix.source,
                    fix.rewrite.apply(fix.source.text),
                    engine.root,
                    before_rename=before_rename,
                )
                done.applied.append(fix)
                if on_write is not None:
                    on_write(fix)
        except FileChanged as exc:
            changed += 1
            if changed > RETRIES:
                done.errors.append(f"{exc} ({RETRIES + 1} tries)")
                done.left = found
                return done
            continue
        except WriteError as exc:
            done.errors.append(str(exc))
            done.left = found
            return done
    return done
