"""Analysis of files: what the CLI and the daemon call. Knows nothing of LSP or of torch.

For one file: read and parse it here (bad bytes and syntax errors need no user code), then ask
a worker to import it and list its units, then analyse each unit in its own job, so that a
unit that hangs or kills its worker costs only itself: its error is reported and the next unit
runs in a replacement worker.
"""

from __future__ import annotations

import functools
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from ..config import ALL_CHECKS, EXAMPLE_DEF, Config
from ..findings import FileResult, Finding, SiteId, TargetId, TargetReport, from_wire
from ..static.reach import Reach, Reachability
from ..texts.errors import error_at, error_from_death
from ..texts.locate import Workspace
from ..texts.source import content_hash, decode_source, syntax_error
from ..wire import Unit
from .cancel import CancelToken
from .declarations import Declarations
from .partial import Partial
from .pool import (
    LOG_LINES_PER_JOB,
    JobCancelled,
    JobFailed,
    WorkerDied,
    WorkerPool,
    default_python,
)
from .reuse import Memo, UnitResult, Units

LogFn = Callable[[str], None]
ProgressFn = Callable[[dict[str, Any]], None]
_CLASS_DEF = re.compile(rb"^class\s+\w+\s*\(", re.M)

_DEATH_HINTS = {
    "timeout": "Look for an endless loop or a blocking call on that line; raise "
    "`timeout` in [tool.dynamo-lens] if the model is just slow.",
    "memory": "The inputs or the model are too large for analysis; use smaller example inputs "
    "or raise `memory-limit-mb`.",
    "crash": "A C extension or custom op crashed the process; run the example without "
    "torch.compile to see whether eager crashes too.",
    "exit": "Code that runs at import or in forward should not end the process.",
}


# What reuse costs the analysis in which it runs (reach keys, memo lookups, the worker's target
# keys): per thread, since the daemon analyses files on several.
_BOOKS = threading.local()
F = TypeVar("F", bound=Callable[..., Any])


def _booked(fn: F) -> F:
    """Adds the time ``fn`` takes to this thread's bookkeeping."""

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _BOOKS.seconds = getattr(_BOOKS, "seconds", 0.0) + time.perf_counter() - t0

    return timed  # type: ignore[return-value]


def might_have_targets(data: bytes, config_targets: Sequence[str], guess: bool) -> bool:
    """Cheap filter so files with nothing to compile never start user code."""
    if config_targets or EXAMPLE_DEF.search(data):
        return True
    return guess and b"Module" in data and bool(_CLASS_DEF.search(data))


def _only(reports: list[TargetReport], want: TargetId | None) -> list[TargetReport]:
    """The reports of the one target asked for, where one entry of an example was."""
    if want is None or want.variant is None:
        return reports
    return [r for r in reports if TargetId.parse(r.target).short == want.short]


class Engine:
    def __init__(
        self,
        root: Path,
        config: Config,
        *,
        python: str | None = None,
        on_log: LogFn | None = None,
        on_restart: Callable[[str], None] | None = None,
        replace_at_once: bool = False,
    ) -> None:
        """``replace_at_once``: a worker that dies is replaced at once, warm for the next
        request (the daemon), rather than when a next job comes (a command line, a test)."""
        self.root = Path(os.path.realpath(root))
        self.config = config
        self.workspace = Workspace(self.root, config.excludes)
        self.declarations = Declarations(self.root, config.excludes)
        self._log = on_log or (lambda _m: None)
        self.pool = WorkerPool(
            python or default_python(),
            self.root,
            size=config.workers,
            on_log=lambda line: self._log(f"[user output] {line}"),
            memory_limit_mb=config.memory_limit_mb,
            on_restart=lambda why: self._restarted(why),
            replace_at_once=replace_at_once,
        )
        self._on_restart = on_restart
        self._started = False
        # Per-unit results by what each unit reaches, for analyses that may reuse them.
        self.memo = Memo()
        self.reachability = Reachability(self.root)
        self.units_reused = self.units_run = 0  # what reuse saved, for logs, tests and benches
        # Targets of units that ran: analysed again, or reused by their key (targetkeys.py).
        self.targets_reused = self.targets_run = 0

    def _restarted(self, why: str) -> None:
        self._log(f"worker restarted ({why})")
        if self._on_restart is not None:
            self._on_restart(why)

    def start(self) -> None:
        if not self._started:
            self._started = True
            self.pool.start()

    def environment(self, timeout: float = 300.0) -> dict[str, Any]:
        self.start()
        return self.pool.environment(timeout)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Engine:
        # Workers start on first use: a run that needs none (static checks) never imports torch.
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _config_targets(self, path: Path) -> list[str]:
        out = []
        for t in self.config.targets:
            file_part, _, name = t.rpartition(":")
            if file_part and name and (self.root / file_part).resolve() == path:
                out.append(t)
        return out

    def analyze_file(
        self,
        path: Path,
        checks: Sequence[str] | None = None,
        *,
        cancel: CancelToken | None = None,
        on_progress: ProgressFn | None = None,
        devices: Sequence[str] | None = None,
        mode: str | None = None,
        dynamic: bool | str | None = "config",
        only_target: str | None = None,
        extra: dict[str, Any] | None = None,
        reuse: bool = False,
        cwd: str | None = None,
        trace_to: str | None = None,
    ) -> FileResult:
        """``reuse``: a unit whose reachable code is unchanged since its last analysis by this
        engine gets that result back (moved with the text) instead of running again."""
        t0 = time.monotonic()
        path = Path(os.path.realpath(path))
        requested = list(checks or self.config.checks)
        checks = [c for c in requested if c in ALL_CHECKS]
        try:
            data = path.read_bytes()
        except OSError as exc:
            return FileResult(
                str(path), "", findings=[error_at(str(path), 1, f"Cannot read file: {exc}")]
            )
        result = FileResult(str(path), content_hash(data))
        text, bad = decode_source(str(path), data)
        if bad is None and text is not None:
            bad = syntax_error(str(path), text)
        if bad is not None:
            result.findings.append(bad)
            result.duration = time.monotonic() - t0
            return result
        if "static" in requested and text is not None:
            from ..static import analyze_source  # pure AST: no torch, no user code

            result.findings += analyze_source(text, str(path))
        config_targets = self._config_targets(path)
        guess, skip = self._guess_policy(data, config_targets)
        # A traced file runs for its own compiles, whether or not it declares a target.
        if not checks or (trace_to is None and not might_have_targets(data, config_targets, guess)):
            result.duration = time.monotonic() - t0
            return result
        reuse = reuse and not (devices or mode or dynamic != "config" or only_target or extra)
        file_key = (str(path), result.content_hash, tuple(checks), guess, tuple(skip))
        _BOOKS.seconds = 0.0
        if reuse and self._all_reused(result, file_key, checks, text):
            self._log_books(path)
            result.duration = time.monotonic() - t0
            return result
        self.start()
        base = {
            "root": str(self.root),
            "path": str(path),
            "hash": result.content_hash,
            "config": self.config.to_dict(),
            "config_targets": config_targets,
            "guess": guess,
            "guess_skip": skip,
            # Reusing results, the worker may also keep the workspace modules an edit cannot
            # have changed (worker/warmmodules.py); without, every analysis starts afresh.
            "warm": reuse,
        }
        if cwd is not None:  # the worker runs the file's code from there (a notebook's folder)
            base["cwd"] = cwd
        if trace_to is not None:  # torch's trace of the file's own compiles, while it imports
            base["trace_to"] = trace_to
        result.ran = True
        try:
            found = self._job("discover", base, path, 1, None, cancel, on_progress)
        except JobCancelled:
            result.cancelled = True
            return result
        if isinstance(found, Finding):
            result.findings.append(found)
            result.interrupted = True
            return result
        result.findings += from_wire(found.get("findings", []), list[Finding])
        result.imports = list(found.get("imports", []))
        if found.get("warm"):
            self._log(
                f"{path.name}: {len(found['warm'])} workspace module(s) kept warm, not executed "
                f"again ({', '.join(found['warm'][:3])}{', …' if len(found['warm']) > 3 else ''})"
            )
        if found.get("tainted"):
            result.interrupted = True
            self._log(f"{path.name}: importing it left the worker changed: {found['tainted']}")
        units = [Unit.of_wire(u) for u in found.get("units", [])]
        if reuse and not result.findings and not found.get("tainted"):
            self.memo.put_file(file_key, Units(units, result.imports))
        reused = 0
        want = TargetId.parse(only_target) if only_target is not None else None
        if want is not None:
            units = [u for u in units if want.unit in (u.name, u.attr)]
        for unit in units:
            if cancel is not None and cancel.cancelled:
                result.cancelled = True
                break
            reach = self._reach(unit, path, text) if reuse else None
            if reach is not None and self._reused(unit, checks, reach, result):
                reused += 1
                continue
            self.units_run += 1
            params = dict(base, unit=unit.as_wire(), checks=checks, **(extra or {}))
            if devices:
                params["devices"] = list(devices)
            if mode:
                params["mode"] = mode
            if dynamic != "config":
                params["dynamic"] = dynamic
            unit_key = (unit.path, unit.name, tuple(checks))
            params["target_keys"] = reach is not None
            try:
                out, placed, so_far = self._unit_job(params, unit, unit_key, cancel, on_progress)
            except JobCancelled:
                result.cancelled = True
                break
            if isinstance(out, Finding):
                result.interrupted = True
                if unit.kind == "guess":
                    # A guess that hangs or runs out of memory is silent: a log line.
                    self._log(f"zero-config guess {unit.name} skipped: {out.message}")
                    continue
                for r in so_far:  # what the checks that finished before it stopped found
                    r.content_hash = result.content_hash
                result.reports += _only(so_far, want)
                result.findings.append(out)
                continue
            for line in out.get("skipped", []):
                self._log(f"{line} (skipped; no finding)")
            if out.get("tainted"):
                # Results from a process user code changed are shown, never cached.
                result.interrupted = True
                self._log(f"{unit.name}: the worker was left changed: {out['tainted']}")
            fresh = _only(from_wire(out.get("reports", []), list[TargetReport]), want)
            reports = self._in_order(fresh, placed, out.get("order", []))
            for r in reports:
                r.content_hash = result.content_hash
            unit_findings = from_wire(out.get("findings", []), list[Finding])
            result.reports += reports
            result.findings += unit_findings
            if reach is not None and not out.get("tainted"):
                self._keep_targets(unit_key, fresh, out.get("keys", []), placed)
            if (
                reach is not None
                and not out.get("tainted")
                and self._known(reach, reports, unit_findings)
            ):
                key = (unit.path, unit.name, tuple(checks))
                self.memo.put_unit(key, UnitResult(reach, reports, unit_findings))
        if reused:
            self._log(
                f"{path.name}: {reused} of {len(units)} target(s) reused (the edit cannot "
                f"reach them)"
            )
        if reuse:
            self._log_books(path)
        result.duration = time.monotonic() - t0
        return result

    def _log_books(self, path: Path) -> None:
        self._log(
            f"{path.name}: bookkeeping {getattr(_BOOKS, 'seconds', 0.0) * 1e3:.1f} ms (reach "
            "keys, memo lookups, target keys)"
        )

    def verify_rewrite(
        self,
        path: str | Path,
        target: str,
        rewrite: dict[str, Any],
        site: SiteId,
        *,
        source: str | None = None,
        digest: str = "",
        cancel: CancelToken | None = None,
        on_progress: ProgressFn | None = None,
        bystander: bool = False,
        also: list[SiteId] | None = None,
    ) -> dict[str, Any] | Finding:
        """The worker's verdict (worker/verify.py) on ``rewrite`` for the break at ``site`` that
        ``target``, a target of ``path``, reported (or, ``bystander``, that another target of
        the file did: it must be left no worse); a Finding if the job itself died.
        ``source`` is the edited file's text the rewrite is for and ``digest`` its bytes' hash:
        the worker verifies that text, and refuses a file that holds other bytes meanwhile.
        ``also``: other break sites; the verdict's ``gone`` says which the rewrite removes too."""
        path = Path(os.path.realpath(path))
        config_targets = self._config_targets(path)
        guess, skip = self._guess_policy(path.read_bytes(), config_targets)
        self.start()
        params = {
            "root": str(self.root),
            "path": str(path),
            "config": self.config.to_dict(),
            "config_targets": config_targets,
            "guess": guess,
            "guess_skip": skip,
            "target": target,
            "rewrite": rewrite,
            "site": list(site),
            "label": target,
            "source": source,
            "digest": digest,
            "bystander": bystander,
            "also": [list(s) for s in also or []],
        }
        try:
            return self._job("verify", params, path, 1, target, cancel, on_progress)
        except JobCancelled:
            return {"verified": False, "checks": [], "cancelled": True}

    def _unit_job(
        self,
        params: dict[str, Any],
        unit: Unit,
        unit_key: tuple[Any, ...],
        cancel: CancelToken | None,
        on_progress: ProgressFn | None,
    ) -> tuple[dict[str, Any] | Finding, dict[str, tuple[Reach, UnitResult]], list[TargetReport]]:
        """The unit's analysis job, and the results of the targets it did not analyse again
        (their key held: see worker/targetkeys.py), moved to where they are now. A result that
        cannot be moved is asked for again (JobCancelled passes through). A job that stopped
        (its limits, a crash) is its error and the reports its finished checks made."""
        known = self.memo.target_keys(unit_key) if params["target_keys"] else []
        while True:
            partial = Partial(on_progress)
            out = self._job(
                "analyze",
                dict(params, known_targets=known),
                Path(unit.path),
                unit.line,
                self._target_name(unit),
                cancel,
                partial,
            )
            if isinstance(out, Finding):
                placed, _ = self._held(unit_key, partial.reused)
                so_far = self._in_order(partial.reports(), placed, partial.order)
                return partial.stopped(out), {}, so_far
            t0 = time.perf_counter()
            _BOOKS.seconds = getattr(_BOOKS, "seconds", 0.0) + float(out.get("keys_s", 0.0))
            placed, missing = self._held(unit_key, out.get("reused", []))
            if missing:
                known = [k for k in known if k not in missing]
                continue
            _BOOKS.seconds += time.perf_counter() - t0
            self.targets_reused += len(placed)
            self.targets_run += len(out.get("reports", [])) if params["target_keys"] else 0
            if placed:
                self._log(
                    f"{unit.name}: {len(placed)} of {len(out.get('order', []))} "
                    "target(s) reused (the edit cannot reach them)"
                )
            return out, placed, []

    def _held(
        self, unit_key: tuple[Any, ...], reused: list[dict[str, Any]]
    ) -> tuple[dict[str, tuple[Reach, UnitResult]], list[Any]]:
        """The results this engine holds for the targets the worker reused, by target, and the
        keys of those it no longer holds."""
        placed: dict[str, tuple[Reach, UnitResult]] = {}
        missing: list[Any] = []
        for entry in reused:
            key = from_wire(entry["key"], Reach)
            got = self.memo.target(unit_key, key)
            if got is None:
                missing.append(key.key)
            else:
                placed[entry["target"]] = (key, got)
        return placed, missing

    @staticmethod
    def _in_order(
        fresh: list[TargetReport],
        placed: dict[str, tuple[Reach, UnitResult]],
        order: list[str],
    ) -> list[TargetReport]:
        """The fresh and the reused targets' reports, in the order the example returned them."""
        by_name = {r.target: r for r in fresh}
        for name, (_key, got) in placed.items():
            by_name[name] = replace(got.reports[0])
        ranked = {name: i for i, name in enumerate(order)}
        return sorted(by_name.values(), key=lambda r: ranked.get(r.target, len(ranked)))

    @_booked
    def _keep_targets(
        self,
        unit_key: tuple[Any, ...],
        fresh: list[TargetReport],
        keys: list[Any],
        placed: dict[str, tuple[Reach, UnitResult]],
    ) -> None:
        """The unit's targets by key, for its next run: those analysed now and those reused."""
        results = {key.key: got for key, got in placed.values()}
        for report, wire in zip(fresh, keys, strict=False):
            if wire is None:
                continue
            key = from_wire(wire, Reach)
            if self._known(key, [report], []):
                results[key.key] = UnitResult(key, [report], [])
        self.memo.put_targets(unit_key, results)

    @_booked
    def _reach(self, unit: Unit, path: Path, text: str | None) -> Reach:
        upath = os.path.realpath(unit.path)
        reach = self.reachability.of(upath, unit.attr, text if upath == str(path) else None)
        if reach.uncertain:
            self._log(
                f"{unit.name}: what it reaches is not certain from the source "
                f"({reach.uncertain}); the whole module counts"
            )
        return reach

    def _known(self, reach: Reach, reports: list[TargetReport], more: list[Finding]) -> bool:
        """Whether the result names only workspace files the source showed the unit reaches:
        one it reached some other way (a registry, an import by a computed name) would not
        make it run again when that file changes, so it is not kept."""
        found = [*more, *(f for r in reports for f in r.findings)]
        files = {f.path for f in found} | {fr.path for f in found for fr in f.stack}
        unseen = sorted(
            p
            for p in files
            if self.workspace.contains(p) and os.path.realpath(p) not in reach.modules
        )
        if unseen:
            names = ", ".join(os.path.basename(p) for p in unseen[:3])
            self._log(f"a target reached {names} in a way the source does not show: not reused")
        return not unseen

    @_booked
    def _reused(self, unit: Unit, checks: list[str], reach: Reach, result: FileResult) -> bool:
        """Adds the unit's last result to ``result`` if the edit cannot have changed it."""
        got = self.memo.unit((unit.path, unit.name, tuple(checks)), reach)
        if got is None:
            return False
        self.units_reused += 1
        result.reports += [replace(r, content_hash=result.content_hash) for r in got.reports]
        result.findings += got.findings
        return True

    @_booked
    def _all_reused(
        self, result: FileResult, file_key: tuple[Any, ...], checks: list[str], text: str | None
    ) -> bool:
        """A file whose bytes are as last discovered and whose every unit is reused: no worker
        runs (an edit in a helper that none of its targets reach)."""
        known = self.memo.file(file_key)
        if known is None:
            return False
        trial = FileResult(result.path, result.content_hash)
        path = Path(result.path)
        for unit in known.units:
            if not self._reused(unit, checks, self._reach(unit, path, text), trial):
                return False
        result.reports += trial.reports
        result.findings += trial.findings
        result.imports = list(known.imports)
        result.ran = True
        self._log(
            f"{path.name}: all {len(known.units)} target(s) reused: the edit cannot reach them"
        )
        return True

    def _guess_policy(self, data: bytes, config_targets: list[str]) -> tuple[bool, list[str]]:
        """Zero-config guesses: everywhere in a workspace that declares nothing; else only
        classes that nothing in the workspace uses (see ``declarations``)."""
        if not self.config.guess_targets or config_targets or EXAMPLE_DEF.search(data):
            return False, []
        if self.config.targets:
            return False, []
        return self.declarations.guess_policy(data)

    def _target_name(self, unit: Unit) -> str:
        try:
            rel = Path(unit.path).resolve().relative_to(self.root).as_posix()
        except ValueError:
            rel = unit.path
        return str(TargetId(rel, unit.name))

    def _job(
        self,
        op: str,
        params: dict[str, Any],
        path: Path,
        line: int,
        target: str | None,
        cancel: CancelToken | None,
        on_progress: ProgressFn | None,
    ) -> dict[str, Any] | Finding:
        t0 = time.monotonic()
        what = f"{op} {target or path.name}"

        def output(lines: list[str], count: int) -> None:
            if count > LOG_LINES_PER_JOB:
                self._log(
                    f"{what}: user code printed {count} lines; the first {LOG_LINES_PER_JOB} "
                    "were logged (the rest were counted, not logged)"
                )
            elif count:
                self._log(f"{what}: user code printed {count} line(s)")

        try:
            out = self.pool.run(
                op,
                params,
                timeout=self.config.timeout,
                cancel=cancel,
                on_progress=on_progress,
                on_output=output,
            )
            self._log(f"{what}: {time.monotonic() - t0:.2f} s")
            return out
        except WorkerDied as died:
            self._log(f"{what}: worker died ({died.reason}): {died.message}; restarting it")
            tail = "\n".join(died.output[-10:])
            return error_from_death(
                died.dump,
                self.workspace,
                str(path),
                line,
                f"Analysis stopped: {died.message}",
                explanation=(f"Last output of user code:\n{tail}" if tail else ""),
                hints=[_DEATH_HINTS.get(died.reason, "")] if died.reason in _DEATH_HINTS else [],
                target=target,
            )
        except JobFailed as failed:
            self._log(f"{what}: internal error: {failed.error.get('traceback', failed)}")
            return error_at(
                str(path),
                line,
                f"Dynamo Lens internal error while analysing: {failed}",
                explanation=str(failed.error.get("traceback", "")),
                target=target,
            )
