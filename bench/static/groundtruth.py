"""Dynamic ground truth for the static-hint benchmark: where real torch breaks the graph.

Run as a subprocess by ``precision_recall.py`` (it imports torch and user code):

    python bench/static/groundtruth.py ROOT OUT.json FILE...

For each FILE (a module under ROOT, imported with ROOT on ``sys.path``), every module-level
``compile_example``/``compile_example_<x>`` is called and each ``(target, args[, kwargs])`` it
returns is run under ``torch._dynamo.explain``. A break's line is the deepest frame of its user
stack inside ROOT. Two sources are merged: explain's ``break_reasons`` (only breaks followed by
a compiled graph) and every ``log_graph_break`` call (which also sees breaks after which Dynamo
skips the frame, e.g. GB7000 "graph break in loop"), the same two the worker merges. Each call is
also run once eagerly under ``sys.settrace`` to record which lines of ROOT it executes.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.oracle import example_calls, example_functions, gb_registry

_GB_URL = re.compile(r"gb/gb(\d{4})\.html")


def main(argv: list[str]) -> int:
    root = os.path.realpath(argv[0])
    out_path = argv[1]
    files = argv[2:]
    sys.path.insert(0, root)

    import torch
    from torch._dynamo import symbolic_convert as sc

    registry = gb_registry()
    logged: list[tuple[str, list[Any]]] = []
    orig = sc.InstructionTranslatorBase.log_graph_break

    def patched(self: Any, code_options: Any, reason: str, exc: Any) -> Any:
        stack = getattr(exc, "real_stack", None)
        if stack is None:
            stack = torch._guards.TracingContext.extract_stack()
        gb_type = getattr(exc, "gb_type", None) or type(exc).__name__
        logged.append((str(gb_type), list(stack)))
        return orig(self, code_options, reason, exc)

    sc.InstructionTranslatorBase.log_graph_break = patched  # type: ignore[method-assign]

    def in_root(filename: str) -> bool:
        if not filename or filename.startswith("<"):
            return False  # <frozen genericpath>, <string>: not files (and not relative paths)
        real = os.path.realpath(filename)
        return real.startswith(root + os.sep) and "site-packages" not in real

    def deepest(stack: list[Any]) -> tuple[str, int, str] | None:
        for fs in reversed(stack):
            if in_root(fs.filename):
                return os.path.realpath(fs.filename), int(fs.lineno), fs.name
        return None

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        fn = frame.f_code.co_filename
        if in_root(fn):
            covered.setdefault(os.path.realpath(fn), set()).add(frame.f_lineno)
            return tracer
        return None

    covered: dict[str, set[int]] = {}
    report: dict[str, Any] = {"files": {}}
    for file in files:
        rel = os.path.relpath(os.path.realpath(file), root)
        modname = rel[:-3].replace(os.sep, ".")
        entry: dict[str, Any] = {"calls": 0, "breaks": [], "covered": {}, "errors": []}
        report["files"][os.path.realpath(file)] = entry
        try:
            mod = importlib.import_module(modname)
        except BaseException as e:
            entry["errors"].append(f"import: {type(e).__name__}: {e}")
            continue
        examples = example_functions(mod)
        covered.clear()
        breaks: dict[tuple[str, int, str], dict[str, Any]] = {}
        for ex in examples:
            try:
                calls = example_calls(ex())
            except BaseException as e:
                entry["errors"].append(f"{ex.__name__}: {type(e).__name__}: {e}")
                continue
            for target, args, kwargs in calls:
                entry["calls"] += 1

                logged.clear()
                result = None
                try:
                    result = torch._dynamo.explain(target)(*args, **kwargs)
                except BaseException as e:
                    entry["errors"].append(f"explain {ex.__name__}: {type(e).__name__}: {e}")
                sources: list[tuple[str, str, list[Any], str]] = []
                for br in getattr(result, "break_reasons", None) or []:
                    m = _GB_URL.search(br.reason)
                    first = br.reason.strip().splitlines()[0] if br.reason.strip() else ""
                    gb = f"GB{m.group(1)}" if m else registry.get(first)
                    sources.append((gb or "", first, list(br.user_stack), "explain"))
                for gb_type, stack in logged:
                    sources.append((registry.get(gb_type, ""), gb_type, stack, "log"))
                for gb, gb_type, stack, src in sources:
                    loc = deepest(stack)
                    if loc is None:
                        continue
                    key = (loc[0], loc[1], gb or gb_type)
                    b = breaks.setdefault(
                        key,
                        {
                            "path": loc[0],
                            "line": loc[1],
                            "func": loc[2],
                            "gb_id": gb or None,
                            "gb_type": gb_type,
                            "sources": [],
                        },
                    )
                    if src not in b["sources"]:
                        b["sources"].append(src)
                torch._dynamo.reset()
                # Coverage after explain, so the first (compiled) call sees fresh module state.
                sys.settrace(tracer)
                try:
                    target(*args, **kwargs)
                except BaseException as e:
                    entry["errors"].append(f"eager {ex.__name__}: {type(e).__name__}: {e}")
                finally:
                    sys.settrace(None)
        entry["breaks"] = sorted(breaks.values(), key=lambda b: (b["path"], b["line"]))
        entry["covered"] = {p: sorted(lines) for p, lines in covered.items()}
    Path(out_path).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception:
        traceback.print_exc()
        sys.exit(2)
