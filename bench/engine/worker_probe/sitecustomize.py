"""Bench-only probe, put on PYTHONPATH of the engine's worker by bench_breaks.py.

When DYNAMO_LENS_BENCH_PROBE=1 and this is a Dynamo Lens worker (DYNAMO_LENS_FDS is set), each
job in ``dynamo_lens.worker.jobs.JOBS`` is wrapped so that the worker prints
``DLPROBE <op> <seconds> <len(sys.modules)>`` (its own time inside the job function) to its
output pipe, which the parent's ``on_log`` receives. One line per job; nothing else changes.
"""

import os
import sys

if os.environ.get("DYNAMO_LENS_BENCH_PROBE") == "1" and os.environ.get("DYNAMO_LENS_FDS"):
    import importlib.abc
    import importlib.machinery
    import time

    _TARGET = "dynamo_lens.worker.jobs"

    def _patch(mod):
        def wrap(op, fn):
            def timed(params, progress):
                t0 = time.perf_counter()
                try:
                    return fn(params, progress)
                finally:
                    dt = time.perf_counter() - t0
                    print(f"DLPROBE {op} {dt:.6f} {len(sys.modules)}", flush=True)

            return timed

        for op, fn in list(mod.JOBS.items()):
            mod.JOBS[op] = wrap(op, fn)

    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != _TARGET:
                return None
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None:
                return spec
            real_exec = spec.loader.exec_module

            def exec_module(module):
                real_exec(module)
                _patch(module)

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _Finder())
