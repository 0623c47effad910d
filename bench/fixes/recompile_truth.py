"""Ground truth for bench_recompiles.py, from torch alone (no Dynamo Lens code): an original file
and its fixed copy, each imported under a name of its own, compared over their examples' calls.

    python recompile_truth.py ORIGINAL FIXED   ->  one JSON line on stdout

- frames: the frames torch compiles (its compilation metrics) over every call an example
  returns, in order, under ``torch.compile(backend="eager")`` from a fresh Dynamo: each file's
  own calls (a fix may pass a number as a tensor, or mark a dimension dynamic), in torch's
  settings as that file's import left them (a fix may be a setting);
- breaks: the distinct sites of torch's graph-break log over the same calls;
- equal: every call's eager outputs, the fixed file's against the original's, bitwise, with the
  original's weights (each file builds its own model from the same seed).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import torch
import torch._dynamo

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench.fixes.harness import Settings, same
from bench.oracle import BreakSites, Call, example_calls, example_functions, load

_SITES = BreakSites()


def _calls(mod: Any) -> list[Call]:
    return [c for ex in example_functions(mod) for c in example_calls(ex())]


def compiled(calls: list[Call]) -> tuple[int, int]:
    """Frames torch compiled and distinct break sites, over ``calls`` in order."""
    torch._dynamo.reset()
    torch._dynamo.utils.clear_compilation_metrics()
    _SITES.sites.clear()
    fns: dict[int, Any] = {}
    with torch.no_grad():
        for fn, args, kwargs in calls:
            c = fns.setdefault(id(fn), torch.compile(fn, backend="eager"))
            c(*args, **kwargs)
    frames = len(torch._dynamo.utils.get_compilation_metrics())
    return frames, len(_SITES.sites)


def main(original: str, fixed: str) -> dict[str, Any]:
    _SITES.listen()
    # Each file in torch's settings as its own import left them: a fix may be a setting.
    pristine = Settings()
    a = _calls(load(original, "truth_original"))
    sa = Settings()
    with pristine:
        b = _calls(load(fixed, "truth_fixed"))
    sb = Settings()
    res: dict[str, Any] = {"calls": len(a), "equal": True, "detail": ""}
    if len(a) != len(b):
        return {**res, "equal": False, "detail": f"{len(b)} calls, original {len(a)}"}
    for (fa, _, _), (fb, _, _) in zip(a, b, strict=True):
        if isinstance(fa, torch.nn.Module) and isinstance(fb, torch.nn.Module):
            fb.load_state_dict(fa.state_dict())
    with torch.no_grad():
        for (fa, aa, ka), (fb, ab, kb) in zip(a, b, strict=True):
            try:
                same(fb(*ab, **kb), fa(*aa, **ka))
            except AssertionError as exc:
                res["equal"], res["detail"] = False, str(exc).splitlines()[0]
                break
    with sa:
        res["frames_before"], res["breaks_before"] = compiled(a)
    with sb:
        res["frames_after"], res["breaks_after"] = compiled(b)
    return res


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
