"""Fixes for the breaks of an analysed file: the catalogue's rewrites (fixes/catalogue.py), each
verified by the worker against every target that reported the break (every target of the file,
for a module-wide setting)."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..findings import FileResult, Finding, FixData
from ..fixes.catalogue import FIXABLE, Rewrite, propose, site_key
from .analysis import Engine
from .cancel import CancelToken


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

    @property
    def site(self) -> tuple[str, int, str]:
        f = self.finding
        return (f.path, f.line, site_key(f.kind, f.data.get("gb_type")))


def _breaks(result: FileResult) -> list[Fix]:
    """Each distinct break (or recompile) of the file's reports, with the targets that reported
    it."""
    by_site: dict[tuple[str, int, str], Fix] = {}
    for report in result.reports:
        for f in report.findings:
            if f.kind not in FIXABLE:
                continue
            key = (f.path, f.line, site_key(f.kind, f.data.get("gb_type")))
            fix = by_site.setdefault(key, Fix(f, []))
            if report.target not in fix.targets:
                fix.targets.append(report.target)
    return list(by_site.values())


def fixes_for(
    engine: Engine, result: FileResult, *, cancel: CancelToken | None = None
) -> list[Fix]:
    """A :class:`Fix` per break in ``result``; rewrites are verified one at a time, each
    against every target that reported its break (every target of the file for a module-wide
    setting), and the first that passes is kept."""
    out = []
    for fix in _breaks(result):
        started = time.perf_counter()
        f = fix.finding
        if not engine.workspace.contains(f.path):
            fix.why = "the break is in a library: only the workspace's files are edited"
            out.append(fix)
            continue
        try:
            with open(f.path, encoding="utf-8") as fh:
                source = fh.read()
        except (OSError, UnicodeDecodeError) as exc:
            fix.why = f"cannot read {f.path}: {exc}"
            out.append(fix)
            continue
        rewrites = propose(f, source, in_workspace=True)
        if not rewrites and "library" in f.data:
            fix.why = (
                f"torch breaks inside a library ({f.data['library']}): no file outside the "
                "workspace is edited, and no rewrite of this call matches"
            )
        elif not rewrites:
            fix.why = "no rewrite in the catalogue matches this code"
        every = [r.target for r in result.reports]
        for rw in rewrites:
            fix.rewrite, fix.checks, fix.why = rw, [], ""
            for target in every if rw.module_wide else fix.targets:
                verdict = engine.verify_rewrite(
                    result.path, target, dataclasses.asdict(rw), fix.site, cancel=cancel
                )
                if isinstance(verdict, Finding):
                    fix.checks = [{"name": "runs", "ok": False, "detail": verdict.message}]
                else:
                    fix.checks = list(verdict.get("checks", []))
                failed = [c for c in fix.checks if not c["ok"]]
                if failed or isinstance(verdict, Finding):
                    c = failed[0] if failed else fix.checks[-1]
                    fix.why = f"{target}: {c['name']} failed" + (
                        f" ({c['detail']})" if c.get("detail") else ""
                    )
                    break
            else:
                fix.verified = True
                break
        fix.seconds = time.perf_counter() - started
        out.append(fix)
    return out


def _fix_data(
    rw: Rewrite, verified: bool | None, checks: list[dict[str, Any]], why: str
) -> FixData:
    return FixData(
        rule=rw.rule,
        title=rw.title,
        path=rw.path,
        start=rw.start,
        end=rw.end,
        text=rw.text,
        verified=verified,
        checks=checks,
        why=why,
    )


def attach(engine: Engine, result: FileResult, *, verify: bool) -> None:
    """Puts each break's rewrites in its findings' ``data["fixes"]``: all the catalogue has,
    unverified; with ``verify``, the worker's verdict on them (the verified one, else the one
    tried, with the check that failed)."""
    by_site: dict[tuple[str, int, str], list[FixData]] = {}
    if verify:
        for fix in fixes_for(engine, result):
            if fix.rewrite is not None:
                by_site[fix.site] = [_fix_data(fix.rewrite, fix.verified, fix.checks, fix.why)]
    for f in result.all_findings():
        if f.kind not in FIXABLE:
            continue
        site = (f.path, f.line, site_key(f.kind, f.data.get("gb_type")))
        if site not in by_site and not verify and engine.workspace.contains(f.path):
            try:
                with open(f.path, encoding="utf-8") as fh:
                    source = fh.read()
            except (OSError, UnicodeDecodeError):
                continue
            found = propose(f, source, in_workspace=True)
            by_site[site] = [_fix_data(rw, None, [], "") for rw in found]
        if by_site.get(site):
            f.data["fixes"] = by_site[site]


def apply_verified(
    engine: Engine, path: str, limit: int = 50, checks: tuple[str, ...] = ("breaks", "recompiles")
) -> tuple[list[Fix], list[Fix]]:
    """Writes the verified rewrites of ``path``'s breaks (and recompiles, with ``checks``) one
    at a time, analysing the file again after each (a verdict holds for the text it was
    given); (applied, what is left)."""
    applied: list[Fix] = []
    for _ in range(limit):
        found = fixes_for(engine, engine.analyze_file(Path(path), list(checks)))
        ok = [x for x in found if x.verified and x.rewrite is not None]
        if not ok:
            return applied, found
        rw = ok[0].rewrite
        assert rw is not None
        with open(rw.path, encoding="utf-8") as fh:
            source = fh.read()
        with open(rw.path, "w", encoding="utf-8") as fh:
            fh.write(rw.apply(source))
        applied.append(ok[0])
    return applied, []
