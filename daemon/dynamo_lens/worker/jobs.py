"""The worker's jobs: ``discover`` a file's analysis units, ``analyze`` one unit.

Each job returns plain dicts (findings and target reports) ready for the wire.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import platform
import random
import sys
import time
import types
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from ..config import Config
from ..findings import Finding, Frame, TargetId, TargetReport, dedupe, to_wire
from ..fixes.catalogue import Rewrite, with_flags
from ..texts.errors import error_from_exception, safe_str
from ..texts.locate import Workspace
from . import (
    breaks,
    devices,
    equivalence,
    lastcheck,
    recompiles,
    settings,
    targetkeys,
    timings,
    torchcompat,
    tracefile,
    verify,
    verifyrecompiles,
    warmmodules,
)
from .cancel import Cancelled
from .usercode import (
    Target,
    Unit,
    discover,
    import_file,
    purge_workspace_modules,
    targets_of,
    workspace_modules,
)

Progress = Callable[..., None]


def environment(cfg: Config | None = None) -> dict[str, Any]:
    env: dict[str, Any] = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "executable": sys.executable,
        "cuda": torch.version.cuda,
        "devices": devices.available(),
        "device_names": {d: devices.describe(d) for d in devices.available()},
    }
    if cfg is not None:
        env.update(
            {
                "backend": cfg.backend,
                "mode": cfg.mode,
                "dynamic": cfg.dynamic,
                "recompile_limit": cfg.recompile_limit,
                "automatic_dynamic_shapes": bool(
                    getattr(torch._dynamo.config, "automatic_dynamic_shapes", True)
                ),
            }
        )
    return env


def _config(params: dict[str, Any]) -> Config:
    names = set(Config.__dataclass_fields__)
    return Config(**{k: v for k, v in params.get("config", {}).items() if k in names})


def _workspace(params: dict[str, Any], cfg: Config) -> Workspace:
    return Workspace(Path(params["root"]), cfg.excludes)


def _rel(path: str, ws: Workspace) -> str:
    try:
        return Path(path).resolve().relative_to(ws.root).as_posix()
    except ValueError:
        return path


# The file (and its bytes' hash) whose fresh import this worker's workspace modules are: a job
# for another file, or other bytes, imports afresh first (a pool's jobs for one file may run in
# different workers).
_FRESH: dict[str, str] = {}


def _fresh_import(path: Path, ws: Workspace, content: str, warm: bool = False) -> types.ModuleType:
    """``path``'s module as its bytes ``content`` make it. ``warm``: workspace modules a fresh
    import could not change stay imported (warmmodules.py); else every one is imported again."""
    warmmodules.begin(ws)
    fresh = _FRESH.get(str(path)) != content or not content
    if warm:
        # Also for the same bytes: a module it imports may have changed since (a job of the
        # same analysis in another worker of the pool).
        warmmodules.purge(ws, str(path), fresh)
    elif fresh:
        purge_workspace_modules(ws)
    if fresh:
        _FRESH.clear()
    module = import_file(path, ws)
    _FRESH[str(path)] = content
    return module


def discover_job(params: dict[str, Any], progress: Progress) -> dict[str, Any]:
    cfg = _config(params)
    ws = _workspace(params, cfg)
    path = Path(params["path"]).resolve()
    _FRESH.clear()  # discovery always imports afresh
    settings.restore(settings.PRISTINE)
    # A notebook's program: what its own torch.compile calls compile while it runs, recorded
    # as TORCH_TRACE would (runs/notebook.py reads it); its guards' lines too on torch < 2.9.
    trace_to = params.get("trace_to")
    tap = tracefile.start(Path(trace_to)) if isinstance(trace_to, str) else None
    try:
        with torchcompat.guard_user_lines() if tap else contextlib.nullcontext():
            module = _fresh_import(path, ws, str(params.get("hash", "")), bool(params.get("warm")))
    except Cancelled:
        raise
    except BaseException as exc:  # user code: SystemExit and friends included
        err = error_from_exception(exc, ws, str(path), 1, what=f"importing {path.name}")
        return {"units": [], "findings": to_wire([err])}
    finally:
        if tap is not None:
            tracefile.stop(tap)
    attrs = [t.split(":", 1)[1] for t in params.get("config_targets", [])]
    guess = bool(params.get("guess", cfg.guess_targets))
    units = discover(module, path, attrs, guess, skip=set(params.get("guess_skip", [])))
    imports = sorted({f for _, f in workspace_modules(ws)})
    warm = list(warmmodules.KEPT)  # imported before, kept: not executed again
    return {"units": [u.as_wire() for u in units], "findings": [], "imports": imports, "warm": warm}


def resolve_backend(name: str) -> Any:
    """A registered backend name, or ``package.module:function`` for a custom one."""
    if ":" in name:
        mod, attr = name.split(":", 1)
        return getattr(importlib.import_module(mod), attr)
    return name


def _input_shapes(target: Target) -> list[str]:
    call = target.calls[0]
    fn = target.fn.forward if isinstance(target.fn, torch.nn.Module) else target.fn
    try:
        bound = inspect.signature(fn).bind(*call.args, **call.kwargs)
        named = list(bound.arguments.items())
    except (TypeError, ValueError):
        named = [(f"arg{i}", a) for i, a in enumerate(call.args)] + list(call.kwargs.items())
    return [f"{k}: {recompiles.describe_call(type(call)((v,), {}))[1:-1]}" for k, v in named]


def _label_guess(findings: list[Finding], target: Target) -> list[Finding]:
    if not target.guess:
        return findings
    note = "zero-config guess: inputs inferred, not declared"
    return [replace(f, data={**f.data, "guess": True}, note=note) for f in findings]


def analyze_job(params: dict[str, Any], progress: Progress) -> dict[str, Any]:
    cfg = _config(params)
    ws = _workspace(params, cfg)
    path = Path(params["path"]).resolve()
    unit = Unit.of_wire(params["unit"])
    checks = list(params.get("checks", cfg.checks))
    wanted_devices, missing = devices.resolve(params.get("devices") or cfg.devices)
    mode = params.get("mode", cfg.mode)
    dynamic = params.get("dynamic", cfg.dynamic)
    try:
        module = _fresh_import(path, ws, str(params.get("hash", "")), bool(params.get("warm")))
        targets = targets_of(unit, module)
    except Cancelled:
        raise
    except BaseException as exc:
        if unit.kind == "guess":
            # A guess that cannot even build is our miss, not the user's error.
            return {"reports": [], "findings": [], "skipped": [_skip_reason(unit.attr, exc)]}
        f = error_from_exception(
            exc,
            ws,
            unit.path,
            unit.line,
            what=f"{unit.attr}()",
            target=str(TargetId(_rel(unit.path, ws), unit.name)),
        )
        return {"reports": [], "findings": to_wire([f])}
    env = environment(cfg) | {"mode": mode, "dynamic": dynamic, "devices_used": wanted_devices}
    if missing:
        env["devices_missing"] = missing
    reports = []
    skipped: list[str] = []
    # Several targets from one example: each gets a key (targetkeys.py), and one whose key the
    # parent holds a result for is not analysed again (an edit in another model's forward).
    known = set(params.get("known_targets", []))
    t0 = time.perf_counter()
    keys: list[Any] = []
    watch: targetkeys.Watch | None = None
    if params.get("target_keys") and len(targets) > 1:
        keys, watch = targetkeys.keys_of(targets, unit, ws)
    keys_s = time.perf_counter() - t0  # what the keys cost: the daemon logs it as bookkeeping
    reused: list[dict[str, Any]] = []
    ran: list[Any] = []  # the keys of the targets analysed now, in order
    # Each target starts from the random state and torch settings the example left, whichever
    # ran before it: its findings never depend on which of the others ran or were reused.
    start = _StartState()
    order = [str(TargetId.parse(t.name)._replace(file=_rel(unit.path, ws))) for t in targets]
    # The targets whose results the daemon holds, said before any runs: a job stopped later
    # still shows them (engine/partial.py).
    planned = [
        {"target": order[i], "key": to_wire(k)} for i, k in enumerate(keys) if k.key in known
    ]
    if planned:
        progress(stage="reused", reused=planned, order=order)
    for ti, target in enumerate(targets):
        tid = order[ti]
        key = keys[ti] if keys else None
        if key is not None and key.key in known:
            reused.append({"target": tid, "key": to_wire(key)})
            continue
        ran.append(to_wire(key) if key is not None else None)
        progress(stage="target", target=tid)  # a job stopped from here on stopped in this one
        start.restore()
        run = _TargetRun(target, ws, cfg, env, checks, tid, path)
        reports.append(
            run.execute(
                progress,
                frac=ti / max(len(targets), 1),
                devices=wanted_devices,
                mode=mode,
                dynamic=dynamic,
                min_run_time=float(params.get("min_run_time", 0.2)),
            )
        )
        skipped += run.skipped
        if keys and watch is not None and watch.changed():
            # This target's analysis changed what another one sees (an object they share, a
            # workspace module's global): the targets are not independent. The rest run, and
            # no result of this unit is kept by key.
            keys = []
            ran = [None] * len(ran)
            if planned:  # the rest run after all: only those skipped so far are reused
                progress(stage="reused", reused=reused, order=order)
    keys_out = ran
    return {
        "reports": to_wire(reports),
        "findings": [],
        "skipped": skipped,
        "keys": keys_out,
        "keys_s": keys_s,
        "reused": reused,
        "order": order,
    }


class _StartState:
    """torch's, Python's and numpy's random state and torch's settings (the environment too:
    worker/settings.py), as they are now, to start each target from."""

    def __init__(self) -> None:
        self.torch = torch.random.get_rng_state()
        self.cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
        self.python = random.getstate()
        numpy = sys.modules.get("numpy")
        self.numpy = (numpy, numpy.random.get_state()) if numpy is not None else None
        self.settings = settings.save()

    def restore(self) -> None:
        torch.random.set_rng_state(self.torch)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)
        random.setstate(self.python)
        if self.numpy is not None:
            self.numpy[0].random.set_state(self.numpy[1])
        settings.restore(self.settings)


def _skip_reason(what: str, exc: BaseException) -> str:
    text = safe_str(exc).splitlines()[0] if safe_str(exc) else ""
    return f"zero-config guess {what}: {type(exc).__name__}: {text:.300}"


class _TargetRun:
    """All requested checks of one target; each check's failure is that check's finding."""

    def __init__(
        self,
        target: Target,
        ws: Workspace,
        cfg: Config,
        env: dict[str, Any],
        checks: list[str],
        name: str,
        path: Path,
    ) -> None:
        self.target, self.ws, self.cfg, self.checks, self.name = target, ws, cfg, checks, name
        self.path = str(path)  # the file analysed (the target may be defined in another)
        self.findings: list[Finding] = []
        self.skipped: list[str] = []  # a guess's failures: logged, never error findings
        self.report = TargetReport(
            target=name,
            path=target.path,
            line=target.line,
            kind=target.kind,
            guess=target.guess,
            environment=env,
            checks=checks,
            input_shapes=_input_shapes(target),
            measured_at=time.time(),
        )

    def _guarded(self, what: str, fn: Callable[[], None], device: str | None = None) -> None:
        try:
            fn()
        except Cancelled:
            raise
        except BaseException as exc:  # SystemExit, KeyboardInterrupt: user code's, at its line
            t = self.target
            if t.guess:
                self.skipped.append(_skip_reason(f"{t.name} ({what})", exc))
                return
            self.findings.append(
                error_from_exception(
                    exc, self.ws, t.path, t.line, what=what, target=self.name, device=device
                )
            )

    @functools.cached_property
    def anchor(self) -> Frame | None:
        return breaks.anchor_of(self.target, self.ws)

    def _breaks(self) -> None:
        t = self.target
        res = breaks.find_breaks(t.fn, t.calls[0], self.ws, self.name, self.anchor)
        lastcheck.remember(self.path, t.name, t.calls[0], self.ws, res.findings)
        self.findings.extend(res.findings)
        self.report.graph_count = res.graph_count
        # A copy: the environment dict is shared by the job's targets.
        self.report.environment = {**self.report.environment, "compile_time": res.compile_time}

    def _recompiles(self, dynamic: bool | None) -> None:
        t = self.target
        how = (dynamic, self.cfg.recompile_limit, self.cfg.recompile_probes)
        context = lastcheck.recompile_context(t, how, self.ws)
        res = recompiles.find_recompiles(
            t,
            self.ws,
            name=self.name,
            dynamic=dynamic,
            limit=self.cfg.recompile_limit,
            probes=self.cfg.recompile_probes,
            compiled_frames=[t.path],
            anchor=self.anchor,
        )
        lastcheck.remember_recompiles(self.path, t, self.ws, context, res)
        self.findings.extend(res.findings)
        self.report.recompile_count = res.recompiles
        self.report.variants = res.variants
        for exc, call in res.errors:
            what = f"variant {recompiles.describe_call(call)}"
            self.findings.append(
                error_from_exception(exc, self.ws, t.path, t.line, what=what, target=self.name)
            )
        if "breaks" in self.checks:
            # Variants can take branches the first call did not: their breaks count too.
            # A line the first call already broke on keeps that finding: the variants' logs lack
            # the compilation metrics that tell a break in a loop on torch 2.8 (a fallback).
            seen = {(f.path, f.line) for f in self.findings if f.is_break}
            for cap in res.cap_breaks:
                for site in breaks.collect_sites(None, cap, self.ws, self.anchor):
                    if (site.at.path, site.at.line) not in seen:
                        self.findings.append(breaks.to_finding(site, self.name))

    def _equivalence(self, dev: str, backend: Any, mode: str, dynamic: bool | None) -> None:
        res, summary = equivalence.check(
            self.target,
            dev,
            name=self.name,
            backend=backend,
            backend_name=self.cfg.backend,
            mode=mode,
            dynamic=dynamic,
            rtol=self.cfg.rtol,
            atol=self.cfg.atol,
            grads_mode=self.cfg.grads,
        )
        self.findings.extend(res)
        self.report.equivalence.append(summary)

    def _timings(
        self, dev: str, backend: Any, mode: str, dynamic: bool | None, min_run_time: float
    ) -> None:
        self.report.timings.append(
            timings.measure(
                self.target,
                dev,
                backend=backend,
                backend_name=self.cfg.backend,
                mode=mode,
                dynamic=dynamic,
                min_run_time=min_run_time,
                threads=self.cfg.timing_threads,
            )
        )

    def execute(
        self,
        progress: Progress,
        *,
        frac: float,
        devices: list[str],
        mode: str,
        dynamic: bool | None,
        min_run_time: float,
    ) -> TargetReport:
        tn, name = self.target.name, self.name
        done: list[str] = []

        def finished(*checks: str) -> None:
            # A job stopped later (its time or memory limit, a crash in user code) still shows
            # what the finished checks found: the report so far, kept by the daemon until the
            # job ends (engine/partial.py).
            done.extend(checks)
            progress(stage="checked", target=name, report=to_wire(self._result(done)))

        if "breaks" in self.checks:
            progress(stage="breaks", target=name, fraction=frac)
            self._guarded(f"tracing {tn}", self._breaks)
            finished("breaks")
        if "recompiles" in self.checks:
            progress(stage="recompiles", target=name, fraction=frac)
            self._guarded(f"running variants of {tn}", lambda: self._recompiles(dynamic))
            finished("recompiles")
        backend: list[Any] = []
        if "equivalence" in self.checks or "timings" in self.checks:
            self._guarded(
                f"loading the backend {self.cfg.backend!r}",
                lambda: backend.append(resolve_backend(self.cfg.backend)),
            )
        if backend:
            for dev in devices:
                if "equivalence" in self.checks:
                    progress(stage="equivalence", target=name, device=dev, fraction=frac)
                    self._guarded(
                        f"comparing compiled and eager {tn} on {dev}",
                        lambda dev=dev: self._equivalence(dev, backend[0], mode, dynamic),  # type: ignore[misc]
                        dev,
                    )
                if "timings" in self.checks:
                    progress(stage="timings", target=name, device=dev, fraction=frac)
                    self._guarded(
                        f"timing {tn} on {dev}",
                        lambda dev=dev: self._timings(dev, backend[0], mode, dynamic, min_run_time),  # type: ignore[misc]
                        dev,
                    )
                # This device's comparison and timing, in the report beside the others'.
                finished(
                    *(c for c in ("equivalence", "timings") if c in self.checks and c not in done)
                )
        torch._dynamo.reset()
        return self._result()

    def _result(self, done: list[str] | None = None) -> TargetReport:
        """The report with the findings so far: the report itself, or where ``done`` names
        the checks finished, a copy that says only those ran (what a job stopped now shows)."""
        findings = _label_guess(dedupe(self.findings), self.target)
        if not self.cfg.library_findings:
            findings = [f for f in findings if "library" not in f.data]
        breaks = sum(1 for f in findings if f.is_break)
        if done is not None:
            return replace(self.report, findings=findings, break_count=breaks, checks=list(done))
        self.report.findings, self.report.break_count = findings, breaks
        return self.report


def verify_job(params: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """A rewrite's verdict (verify.py). User code's failure in either version rejects it."""
    cfg = _config(params)
    ws = _workspace(params, cfg)
    rewrite = with_flags(Rewrite(**params["rewrite"]))
    site = params["site"]
    _FRESH.clear()  # the shadow replaces workspace modules: the next job imports afresh
    settings.restore(settings.PRISTINE)
    progress(stage="verify", target=params["label"], fraction=0.0)
    path = Path(params["path"]).resolve()
    want = TargetId.parse(params["target"])
    attrs = [t.split(":", 1)[1] for t in params.get("config_targets", [])]
    guess = bool(params.get("guess", cfg.guess_targets))
    skip = set(params.get("guess_skip", []))

    def pick(module: types.ModuleType) -> Target:
        for unit in discover(module, path, attrs, guess, skip=skip):
            if unit.name == want.unit:
                for t in targets_of(unit, module):
                    if TargetId.parse(t.name).short == want.short:
                        return t
        raise LookupError(f"{want} is no longer a target of {path.name}")

    try:
        # Every compile of a verification (both versions, their series, their steady time) is
        # for a verdict, not a compile time shown: torch's guard-latency profile after each
        # frame's compile (~18 ms a frame here, a sixth of a verification) measures nothing
        # the verdict reads.
        with torchcompat.without_guard_latency_profile():
            verdict = verify.verify(
                path,
                pick,
                rewrite,
                (str(site[0]), int(site[1]), str(site[2])),
                ws,
                backend=resolve_backend(cfg.backend),
                grads_mode=cfg.grads,
                label=params["label"],
                recompile_check=verifyrecompiles.RecompileCheck(
                    cfg.dynamic, cfg.recompile_limit, cfg.recompile_probes
                ),
                source=params.get("source"),
                digest=str(params.get("digest") or ""),
                bystander=bool(params.get("bystander")),
                also=tuple((str(p), int(n), str(c)) for p, n, c in params.get("also") or []),
            )
    except Cancelled:
        raise
    except BaseException as exc:  # user code, original or rewritten: the rewrite is not shown
        verdict = verify.Verdict(rewrite, params["label"])
        verdict.add("runs", False, f"{type(exc).__name__}: {safe_str(exc)[:300]}")
    finally:
        torch._dynamo.reset()
    return {
        "verified": verdict.verified,
        "checks": verdict.checks,
        "paths": verdict.paths,
        "inputs": verdict.inputs,
        "timing": verdict.timing,
        "uncovered": to_wire(verdict.uncovered),
        "gone": [list(s) for s in verdict.gone],
    }


def ping_job(params: dict[str, Any], progress: Progress) -> dict[str, Any]:
    return {"pong": True}


JOBS: dict[str, Callable[[dict[str, Any], Progress], dict[str, Any]]] = {
    "discover": discover_job,
    "analyze": analyze_job,
    "verify": verify_job,
    "ping": ping_job,
}
