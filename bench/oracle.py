"""The benchmarks' one torch oracle: what torch alone says about a file, with no Dynamo Lens code,
so that a bug of ours cannot agree with itself. Every bench that needs ground truth or a floor
reads a file's examples, calls and graph breaks through here:

- ``example_functions``/``example_calls``/``call_parts``: a module's ``compile_example*`` and the
  ``(target, args[, kwargs])`` calls it returns, as the product's declaration reads them;
- ``trains``: whether a target runs with gradients (a module in training mode, inputs that
  require grad), as eager would;
- ``gb_registry``: torch's own graph-break registry, ``gb_type`` -> ``GBxxxx``;
- ``BreakSites``: the distinct sites of torch's ``graph_breaks`` log ("in user code at
  FILE:LINE") while it listens;
- ``load``/``import_fresh``: a file imported under a name of its own, or afresh from its root.

torch is imported inside the functions: a caller may set ``TORCH_TRACE`` (read at torch's import)
before its first call.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Call = tuple[Any, tuple[Any, ...], dict[str, Any]]

EXAMPLE = re.compile(r"^compile_example(_\w+)?$")
_SITE = re.compile(r"in user code at (\S+:\d+)")


def example_functions(mod: Any, *, own: bool = False) -> list[Callable[[], Any]]:
    """The module's ``compile_example``/``compile_example_<x>`` functions, by name; ``own``:
    only those defined in the module itself (not imported into it)."""
    return [
        v
        for k, v in sorted(vars(mod).items())
        if EXAMPLE.match(k)
        and callable(v)
        and (not own or getattr(v, "__module__", None) == mod.__name__)
    ]


def call_parts(item: Any) -> Call:
    """One ``(target, args[, kwargs])`` entry: a bare argument (a tensor) is a one-tuple."""
    fn, args = item[0], item[1]
    kwargs = item[2] if len(item) == 3 and item[2] else {}
    if not isinstance(args, (tuple, list)):
        args = (args,)
    return fn, tuple(args), dict(kwargs)


def example_calls(result: Any) -> list[Call]:
    """The calls an example returned: one entry, or a list of them (variants); anything else
    (not a ``(callable, args[, kwargs])``) is not a call."""

    def is_call(t: Any) -> bool:
        return isinstance(t, tuple) and len(t) in (2, 3) and callable(t[0])

    if is_call(result):
        return [call_parts(result)]
    if isinstance(result, list):
        return [call_parts(t) for t in result if is_call(t)]
    return []


def trains(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """How the target runs for real: a module in training mode with parameters that need
    gradients, or a function given tensors that require grad."""
    import torch

    if isinstance(fn, torch.nn.Module):
        return fn.training and any(p.requires_grad for p in fn.parameters())
    return any(isinstance(v, torch.Tensor) and v.requires_grad for v in (*args, *kwargs.values()))


def gb_registry() -> dict[str, str]:
    """torch's graph-break registry, ``gb_type`` -> its id (``GB0170``); empty where this torch
    ships none."""
    import torch._dynamo

    path = Path(torch._dynamo.__file__).parent / "graph_break_registry.json"
    out: dict[str, str] = {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return out
    for gb_id, entries in data.items():
        for e in entries if isinstance(entries, list) else [entries]:
            if isinstance(e, dict) and e.get("Gb_type"):
                out.setdefault(e["Gb_type"], gb_id)
    return out


class BreakSites(logging.Handler):
    """The distinct ``FILE:LINE`` sites torch's ``graph_breaks`` log names while listening
    (``listen`` once per process; ``sites.clear()`` between runs). Explain's own count misses a
    break before which nothing was traced; the log does not."""

    def __init__(self) -> None:
        super().__init__()
        self.sites: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        m = _SITE.search(record.getMessage())
        if m:
            self.sites.add(m.group(1))

    def listen(self) -> None:
        import torch._dynamo
        import torch._logging

        torch._logging.set_logs(graph_breaks=True)
        for name, lg in list(logging.root.manager.loggerDict.items()):
            if name.endswith("__graph_breaks") and isinstance(lg, logging.Logger):
                lg.addHandler(self)


def _run_as(path: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def load(path: str, name: str) -> Any:
    """``path`` imported as module ``name`` (its folder first on ``sys.path``)."""
    sys.path.insert(0, os.path.dirname(path))
    return _run_as(path, name)


def import_fresh(root: str, path: str) -> Any:
    """``path`` imported afresh under its dotted name from ``root``: every module of ``root``
    imported before is dropped first, as an edit would need."""
    prefix = os.path.realpath(root) + os.sep  # root and our paths are real paths
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if f and f.startswith(prefix):
            del sys.modules[name]
    for p in (os.path.dirname(path), root):
        if p not in sys.path:
            sys.path.insert(0, p)
    rel = os.path.relpath(path, root)[: -len(".py")]
    return _run_as(path, ".".join(rel.split(os.sep)))
