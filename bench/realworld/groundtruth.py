"""Ground truth from torch alone, for one corpus workspace.

Runs every example's calls under ``torch.compile(backend="eager")`` with torch's structured
trace on (``TORCH_TRACE``), then reads what torch wrote: graph-break artifacts ("Graph break in
user code at FILE:LINE"), compilation metrics (recompile reasons, the recompile limit) and the
exceptions the calls raised. It imports nothing of Dynamo Lens, so a shared bug cannot agree
with itself.

The calls are the ones the engine makes: the declared variants in order, or, for a single
call, probe families that change one dim (or one Python number) at a time from a fresh Dynamo;
a target runs as it trains (grad on for a module in training mode), with a fixed seed.

Severity by fresh values: where the declared variants recompile a frame only once, one more
call continues the change the last two calls made (a size 8 then 12 gives 16, ``n`` 2 then 3
gives 4) on the same compiled function; whether torch compiles again is the truth about whether
that recompile repeats.

    python groundtruth.py WORKSPACE OUT.json
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.oracle import example_calls, example_functions, trains

PROBES = 4
MAX_FAMILIES = 6
LIMIT = 8
_META = re.compile(r"^[VIWEC]\d{4} [\d:.]+\s+\d+ \S+\] (\{.*\})\s*$")
_SITE = re.compile(r"Graph break.*? in user code at (?P<path>.+):(?P<line>\d+)\s*$")
_GB = re.compile(r"/gb/gb(\d+)\.html")


def _trace_file(trace_dir: Path) -> Path | None:
    for h in logging.getLogger("torch.__trace").handlers:
        h.flush()
    files = sorted(trace_dir.glob("*.log"))
    return files[0] if files else None


def _offset(trace_dir: Path) -> int:
    f = _trace_file(trace_dir)
    return f.stat().st_size if f else 0


def _events(trace_dir: Path, start: int) -> list[tuple[dict[str, Any], str]]:
    f = _trace_file(trace_dir)
    if f is None:
        return []
    with f.open("rb") as fh:
        fh.seek(start)
        text = fh.read().decode("utf-8", "replace")
    out: list[tuple[dict[str, Any], list[str]]] = []
    for line in text.splitlines():
        if line.startswith("\t") and out:
            out[-1][1].append(line[1:])
            continue
        m = _META.match(line)
        if m:
            try:
                out.append((json.loads(m.group(1)), []))
            except ValueError:
                continue
    return [(md, "\n".join(p)) for md, p in out]


def _perturb(t: Any, dim: int, k: int) -> Any:
    import torch

    shape = list(t.shape)
    shape[dim] += k
    if t.dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if t.is_floating_point():
        return torch.randn(shape, dtype=t.dtype)
    lo = int(t.min()) if t.numel() else 0
    hi = int(t.max()) + 1 if t.numel() else 2
    return torch.randint(lo, max(hi, lo + 1), shape, dtype=t.dtype)


def _families(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[list[tuple[Any, Any]]]:
    import torch

    fams: list[list[tuple[Any, Any]]] = []
    slots: list[tuple[Any, Any]] = [*enumerate(args), *kwargs.items()]

    def variant(slot: Any, value: Any) -> tuple[Any, Any]:
        a, kw = list(args), dict(kwargs)
        if isinstance(slot, int):
            a[slot] = value
        else:
            kw[slot] = value
        return tuple(a), kw

    for slot, v in slots:
        if isinstance(v, torch.Tensor) and v.dim() >= 1:
            for d in range(v.dim()):
                fams.append([variant(slot, _perturb(v, d, k)) for k in range(1, PROBES + 1)])
        elif isinstance(v, int) and not isinstance(v, bool):
            fams.append([variant(slot, v + k) for k in range(1, PROBES + 1)])
        elif isinstance(v, float):
            fams.append([variant(slot, v * (1 + 0.5 * k)) for k in range(1, PROBES + 1)])
    return fams[:MAX_FAMILIES]


def _onward(before: Any, after: Any) -> Any:
    """``after`` changed once more the way it changed from ``before``."""
    import torch

    if isinstance(after, torch.Tensor):
        shape = list(after.shape)
        if isinstance(before, torch.Tensor) and before.dim() == after.dim():
            pairs = zip(before.shape, shape, strict=True)
            shape = [b + (b - a) if b + (b - a) > 0 else b for a, b in pairs]
        if after.dtype == torch.bool:
            return torch.rand(shape) > 0.5
        if after.is_floating_point():
            return torch.randn(shape, dtype=after.dtype).requires_grad_(after.requires_grad)
        lo = int(after.min()) if after.numel() else 0
        hi = int(after.max()) + 1 if after.numel() else 2
        return torch.randint(lo, max(hi, lo + 1), shape, dtype=after.dtype)
    if type(after) in (int, float) and type(before) is type(after) and after != before:
        return after + (after - before)
    return after


def _fresh(calls: list[tuple[Any, Any]]) -> tuple[Any, Any]:
    (a0, k0), (a1, k1) = calls[-2], calls[-1]
    a0 = [*a0, *[None] * len(a1)]
    args = tuple(_onward(a0[i], v) for i, v in enumerate(a1))
    return args, {k: _onward(k0.get(k), v) for k, v in k1.items()}


def _run(
    fn: Any, calls: list[tuple[Any, Any]], grad: bool, trace_dir: Path, fresh: bool = False
) -> dict[str, Any]:
    import torch

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="eager")
    start = _offset(trace_dir)
    raised = []
    if fresh:
        calls = [*calls, _fresh(calls)]
    for args, kwargs in calls:
        try:
            with torch.random.fork_rng(devices=[]), torch.set_grad_enabled(grad):
                torch.manual_seed(0)
                compiled(*args, **kwargs)
        except Exception as exc:
            raised.append(f"{type(exc).__name__}: {str(exc)[:200]}")
            break
    sites, recompiles, limit = [], [], False
    for md, payload in _events(trace_dir, start):
        art = md.get("artifact")
        if isinstance(art, dict) and art.get("name") == "dynamo_graph_break_reason":
            first = payload.splitlines()[0] if payload else ""
            m = _SITE.search(first)
            gb = _GB.search(payload)
            if m:
                path = os.path.realpath(m["path"])
                sites.append([path, int(m["line"]), f"GB{gb.group(1)}" if gb else None])
        cm = md.get("compilation_metrics")
        if isinstance(cm, dict):
            fail = str(cm.get("fail_reason") or "")
            if "limit" in fail and ("recompile" in fail or "cache" in fail):
                limit = True
            reason = cm.get("recompile_reason")
            if reason and cm.get("fail_type") is None:
                guard = re.sub(r"^\d+/\d+:\s*", "", str(reason).strip().splitlines()[0])
                guard = re.sub(r"\s{2,}#.*$", "", guard).strip()
                recompiles.append([cm.get("co_filename"), cm.get("co_firstlineno"), guard])
    return {"sites": sites, "recompiles": recompiles, "limit": limit, "raised": raised}


def _valid(fn: Any, args: Any, kwargs: Any, grad: bool) -> bool:
    import torch

    try:
        with torch.random.fork_rng(devices=[]), torch.set_grad_enabled(grad):
            torch.manual_seed(0)
            fn(*args, **kwargs)
        return True
    except Exception:
        return False


def main() -> int:
    ws, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    trace_dir = out.parent / f"{out.stem}-trace"
    os.environ["TORCH_TRACE"] = str(trace_dir)  # read by torch at import
    import torch

    torch._dynamo.config.recompile_limit = LIMIT
    sys.path.insert(0, str(ws))
    with contextlib.redirect_stdout(sys.stderr):
        mod = importlib.import_module("example")
    targets = []
    for example in example_functions(mod):
        name = example.__name__
        groups: dict[int, tuple[Any, list[tuple[Any, Any]]]] = {}
        for fn, args, kwargs in example_calls(example()):
            groups.setdefault(id(fn), (fn, []))[1].append((args, kwargs))
        for i, (fn, calls) in enumerate(groups.values()):
            grad = trains(fn, *calls[0])
            declared = len(calls) >= 2
            with contextlib.redirect_stdout(sys.stderr):
                main_run = _run(fn, calls, grad, trace_dir)
                fresh_run = None
                frames: dict[tuple[Any, Any], int] = {}
                for co_file, co_line, _ in main_run["recompiles"]:
                    frames[(co_file, co_line)] = frames.get((co_file, co_line), 0) + 1
                if declared and 1 in frames.values() and not main_run["limit"]:
                    # Seen once: does a fresh value compile again?
                    fresh_run = _run(fn, calls, grad, trace_dir, fresh=True)
                probe_runs = []
                if not declared:
                    for fam in _families(*calls[0]):
                        fam = [c for c in fam if _valid(fn, *c, grad)]
                        if fam:
                            probe_runs.append(_run(fn, [calls[0], *fam], grad, trace_dir))
            sites = {tuple(s) for r in [main_run, *probe_runs] for s in r["sites"]}
            targets.append(
                {
                    "unit": name,
                    "index": i if len(groups) > 1 else None,
                    "declared": declared,
                    "grad": grad,
                    "sites": sorted(sites, key=lambda s: (s[0], s[1], s[2] or "")),
                    "recompiles": len(main_run["recompiles"]),
                    "recompile_guards": main_run["recompiles"],
                    "limit": main_run["limit"],
                    # The recompiles with one fresh call more (None: not needed or not run).
                    "fresh_recompile_guards": fresh_run["recompiles"] if fresh_run else None,
                    "fresh_raised": fresh_run["raised"] if fresh_run else [],
                    "probe_recompiles": [len(r["recompiles"]) for r in probe_runs],
                    "raised": main_run["raised"],
                }
            )
    out.write_text(json.dumps({"torch": torch.__version__, "targets": targets}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
