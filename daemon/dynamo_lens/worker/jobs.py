"""The worker's jobs: ``discover`` a file's analysis units, ``analyze`` one unit.

Each job returns plain dicts (findings and target reports) ready for the wire.
"""

from __future__ import annotations

import importlib
import inspect
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ..config import Config
from ..errors import error_from_exception
from ..findings import Finding, Kind, TargetReport, dedupe
from ..locate import Workspace
from . import breaks, devices, equivalence, recompiles, timings
from .cancel import Cancelled
from .usercode import Target, Unit, discover, import_file, purge_workspace_modules, targets_of

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


def discover_job(params: dict[str, Any], progress: Progress) -> dict[str, Any]:
    cfg = _config(params)
    ws = _workspace(params, cfg)
    path = Path(params["path"]).resolve()
    purge_workspace_modules(ws)
    try:
        module = import_file(path, ws)
    except Cancelled:
        raise
    except BaseException as exc:  # user code: SystemExit and friends included
        f = error_from_exception(exc, ws, str(path), 1, what=f"importing {path.name}")
        return {"units": [], "findings": [f.to_dict()]}
    attrs = [t.split(":", 1)[1] for t in params.get("config_targets", [])]
    units = discover(module, path, attrs, cfg.guess_targets)
    imports = sorted(
        {f for m in list(sys.modules.values()) if (f := getattr(m, "__file__", None)) and ws.contains(f)}
    )
    return {"units": [u.to_dict() for u in units], "findings": [], "imports": imports}


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


def _label_guess(findings: list[Finding], target: Target) -> None:
    if target.guess:
        for f in findings:
            f.data["guess"] = True
            f.message += " (zero-config guess: inputs inferred, not declared)"


def analyze_job(params: dict[str, Any], progress: Progress) -> dict[str, Any]:
    cfg = _config(params)
    ws = _workspace(params, cfg)
    path = Path(params["path"]).resolve()
    unit = Unit(**params["unit"])
    checks = list(params.get("checks", cfg.checks))
    wanted_devices, missing = devices.resolve(params.get("devices") or cfg.devices)
    mode = params.get("mode", cfg.mode)
    dynamic = params.get("dynamic", cfg.dynamic)
    file_findings: list[dict[str, Any]] = []
    try:
        module = import_file(path, ws)
        targets = targets_of(unit, module)
    except Cancelled:
        raise
    except BaseException as exc:
        f = error_from_exception(
            exc,
            ws,
            unit.path,
            unit.line,
            what=f"{unit.attr}()",
            target=f"{_rel(unit.path, ws)}::{unit.name}",
        )
        return {"reports": [], "findings": [f.to_dict()]}
    env = environment(cfg) | {"mode": mode, "dynamic": dynamic, "devices_used": wanted_devices}
    if missing:
        env["devices_missing"] = missing
    reports = []
    for ti, target in enumerate(targets):
        name = f"{_rel(unit.path, ws)}::{target.name}"
        report = TargetReport(
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
        findings: list[Finding] = []

        def guarded(what: str, fn: Callable[[], None], device: str | None = None) -> None:
            try:
                fn()
            except Exception as exc:
                findings.append(
                    error_from_exception(
                        exc, ws, target.path, target.line, what=what, target=name, device=device
                    )
                )

        frac = ti / max(len(targets), 1)
        if "breaks" in checks:
            progress(stage="breaks", target=name, fraction=frac)

            def do_breaks() -> None:
                res = breaks.find_breaks(target.fn, target.calls[0], ws, name)
                findings.extend(res.findings)
                report.graph_count = res.graph_count

            guarded(f"tracing {target.name}", do_breaks)
        if "recompiles" in checks:
            progress(stage="recompiles", target=name, fraction=frac)

            def do_recompiles() -> None:
                res = recompiles.find_recompiles(
                    target,
                    ws,
                    name=name,
                    dynamic=dynamic,
                    limit=cfg.recompile_limit,
                    probes=cfg.recompile_probes,
                    compiled_frames=[target.path],
                )
                findings.extend(res.findings)
                report.recompile_count = res.recompiles
                report.variants = res.variants
                for exc, call in res.errors:
                    findings.append(
                        error_from_exception(
                            exc,
                            ws,
                            target.path,
                            target.line,
                            what=f"variant {recompiles.describe_call(call)}",
                            target=name,
                        )
                    )
                if "breaks" in checks:
                    # Variants can take branches the first call did not: their breaks count too.
                    for cap in res.cap_breaks:
                        for site in breaks.collect_sites(None, cap, ws):
                            findings.append(breaks.to_finding(site, name))

            guarded(f"running variants of {target.name}", do_recompiles)
        backend = resolve_backend(cfg.backend)
        for dev in wanted_devices:
            if "equivalence" in checks:
                progress(stage="equivalence", target=name, device=dev, fraction=frac)

                def do_equiv(dev: str = dev) -> None:
                    res, summary = equivalence.check(
                        target,
                        dev,
                        name=name,
                        backend=backend,
                        backend_name=cfg.backend,
                        mode=mode,
                        dynamic=dynamic,
                        rtol=cfg.rtol,
                        atol=cfg.atol,
                        grads_mode=cfg.grads,
                    )
                    findings.extend(res)
                    report.equivalence.append(summary)

                guarded(f"comparing compiled and eager {target.name} on {dev}", do_equiv, dev)
            if "timings" in checks:
                progress(stage="timings", target=name, device=dev, fraction=frac)

                def do_time(dev: str = dev) -> None:
                    report.timings.append(
                        timings.measure(
                            target,
                            dev,
                            backend=backend,
                            backend_name=cfg.backend,
                            mode=mode,
                            dynamic=dynamic,
                            min_run_time=float(params.get("min_run_time", 0.2)),
                        )
                    )

                guarded(f"timing {target.name} on {dev}", do_time, dev)
        torch._dynamo.reset()
        findings = dedupe(findings)
        _label_guess(findings, target)
        report.findings = findings
        report.break_count = sum(1 for f in findings if f.kind == Kind.GRAPH_BREAK)
        reports.append(report.to_dict())
    return {"reports": reports, "findings": file_findings}


def ping_job(params: dict[str, Any], progress: Progress) -> dict[str, Any]:
    return {"pong": True}


JOBS: dict[str, Callable[[dict[str, Any], Progress], dict[str, Any]]] = {
    "discover": discover_job,
    "analyze": analyze_job,
    "ping": ping_job,
}

