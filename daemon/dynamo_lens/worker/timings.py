"""Cold start and steady state, eager vs compiled, measured with torch.utils.benchmark.

``Timer`` handles warmup, thread settings and CUDA synchronisation; cold times are single first
calls bracketed by an explicit device sync.
"""

from __future__ import annotations

import time
from typing import Any

import torch
from torch.utils import benchmark

from ..findings import DeviceTiming
from .devices import place, sync
from .usercode import Call, Target, eager_of

# Below this an eager call is dominated by Python and launch overhead, not the model's math.
SMALL_CALL_SECONDS = 200e-6


def _first_call(fn: Any, call: Call, device: str) -> float:
    sync(device)
    t0 = time.perf_counter()
    fn(*call.args, **call.kwargs)
    sync(device)
    return time.perf_counter() - t0


def _steady(fn: Any, call: Call, min_run_time: float, threads: int) -> tuple[float, float, int]:
    timer = benchmark.Timer(
        stmt="fn(*args, **kwargs)",
        globals={"fn": fn, "args": call.args, "kwargs": call.kwargs},
        num_threads=threads,
    )
    m = timer.blocked_autorange(min_run_time=min_run_time)
    return float(m.median), float(m.iqr), len(m.times)


def measure(
    target: Target,
    device: str,
    *,
    backend: Any,
    backend_name: str,
    mode: str,
    dynamic: bool | None,
    min_run_time: float = 0.2,
    threads: int = 1,
) -> DeviceTiming:
    fn, call = place(target.fn, target.calls[0], device)
    torch._dynamo.reset()
    kw: dict[str, Any] = {"backend": backend, "dynamic": dynamic}
    if mode != "default" and backend_name == "inductor":
        kw["mode"] = mode
    before = torch.get_num_threads()
    # A fixed thread count, as torch.utils.benchmark does by default: on a loaded machine
    # intra-op threads that wait for each other swamp the numbers being compared.
    torch.set_num_threads(threads)
    try:
        with torch.no_grad():
            eager_first = _first_call(eager_of(fn), call, device)
            eager_median, eager_iqr, n_eager = _steady(eager_of(fn), call, min_run_time, threads)
            compiled = torch.compile(fn, **kw)
            cold = _first_call(compiled, call, device)
            comp_median, comp_iqr, n_comp = _steady(compiled, call, min_run_time, threads)
    finally:
        torch.set_num_threads(before)
    speedup = eager_median / comp_median if comp_median > 0 else float("inf")
    gain = eager_median - comp_median
    break_even = (cold - comp_median) / gain if gain > 0 else None
    return DeviceTiming(
        device=device,
        eager_median=eager_median,
        eager_iqr=eager_iqr,
        compiled_median=comp_median,
        compiled_iqr=comp_iqr,
        cold_compile=cold,
        eager_first_call=eager_first,
        repeats=min(n_eager, n_comp),
        speedup=speedup,
        break_even_calls=break_even,
        small_inputs=eager_median < SMALL_CALL_SECONDS,
        mode=mode,
        dynamic=dynamic,
        backend=backend_name,
        threads=threads,
    )
