"""What differs between the torch releases we support (2.8 to 2.15), in one place.

Each function asks torch what it has rather than comparing version numbers where it can: a
point release that backports a feature then just works.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import torch

from ..texts import breaktext

SUPPORTED = ((2, 8), (2, 15))
VERSION: tuple[int, int] = tuple(  # type: ignore[assignment]
    int(x) for x in re.findall(r"\d+", torch.__version__)[:2]
)


@functools.lru_cache(maxsize=1)
def registry() -> dict[str, str]:
    """gb_type -> GBxxxx: torch's own registry over the table built from a newer one, which
    covers the ids an older torch lacks."""
    out = dict(breaktext.shipped()[0])
    path = Path(torch._dynamo.__file__).parent / "graph_break_registry.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return out
    for gb_id, entries in data.items():
        for entry in entries if isinstance(entries, list) else [entries]:
            if isinstance(entry, dict) and entry.get("Gb_type"):
                out[entry["Gb_type"]] = gb_id
    return out


def legacy_break(text: str) -> tuple[str, str] | None:
    """(gb_type, id) for a break torch < 2.9 words in pre-registry text."""
    return breaktext.legacy_break(text, registry())


def recompile_limit_name() -> str:
    # Renamed from cache_size_limit in torch 2.6; both spellings exist for a while.
    cfg = torch._dynamo.config
    return "recompile_limit" if hasattr(cfg, "recompile_limit") else "cache_size_limit"


def hit_recompile_limit(metrics: dict[str, object]) -> bool:
    """Whether a compilation_metrics record is torch giving up at the recompile limit: 2.13
    words it "recompile limit" in fail_reason, 2.10 "recompile_limit reached" with
    fail_type RecompileLimitExceeded, older ones "cache_size_limit"."""
    kind = str(metrics.get("fail_type") or "")
    text = str(metrics.get("fail_reason") or "").lower().replace("_", " ")
    return (
        kind in ("RecompileLimitExceeded", "CacheLimitExceeded")
        or "recompile limit" in text
        or "cache size limit" in text
    )


# torch < 2.9 records the user line of a guard (the "# code  # file:line" tail of a recompile
# reason) only while the guards logger is enabled for DEBUG during tracing.
_GUARDS_LOGGER = "torch._dynamo.guards.__guards"
NEEDS_GUARD_LOGGER = VERSION < (2, 9)


@contextlib.contextmanager
def guard_user_lines() -> Iterator[None]:
    if not NEEDS_GUARD_LOGGER:
        yield
        return
    log = logging.getLogger(_GUARDS_LOGGER)
    saved = (log.level, log.propagate)
    sink = logging.NullHandler()
    # Enabled, but printed nowhere: torch's own handlers would write every guard to stderr.
    log.setLevel(logging.DEBUG)
    log.propagate = False
    log.addHandler(sink)
    try:
        yield
    finally:
        log.removeHandler(sink)
        log.setLevel(saved[0])
        log.propagate = saved[1]


def forget_imported_modules() -> None:
    """Empty Dynamo's own cache of modules by name (``symbolic_convert._import_module``, a
    ``functools.cache`` since 2.x that ``torch._dynamo.reset()`` keeps): a module forgotten
    from ``sys.modules`` (a shadow's, an edited helper) would otherwise still be the one a
    traced ``from helper import g`` reaches."""
    cached = getattr(torch._dynamo.symbolic_convert, "_import_module", None)
    clear = getattr(cached, "cache_clear", None)
    if clear is not None:
        clear()


# What torch's marks of a tensor's dimensions set on it (mark_dynamic, maybe_mark_dynamic,
# mark_static, mark_unbacked; the names vary by release, each a set or a dict) besides the
# ``_dynamo_`` ones. Not ``_dynamo_static_input_type`` (mark_static_address): torch then
# guards on that very tensor, which a copy is not.
_MARK_NAMES = ("_specialize_on", "_has_dynamo_dim_marking")
_NOT_MARKS = ("_dynamo_static_input_type",)


def dimension_marks(t: torch.Tensor) -> dict[str, object]:
    """The attributes torch's dimension marks set on ``t``: a copy given them compiles as
    the marked tensor does."""
    return {
        k: v
        for k, v in vars(t).items()
        if (k.startswith("_dynamo_") or k in _MARK_NAMES) and k not in _NOT_MARKS
    }


def forget_compile_state() -> None:
    """What torch learned compiling, as ``torch._dynamo.reset`` forgets it, but its caches: the
    sizes automatic dynamic shapes saw per function (keyed by file, line and name, which a
    shadow's functions share with the file's: 2.6 and later), and the floats it was told to
    specialise (by the name of a symbol, any frame's: 2.6 and later). Another target's
    compile then stays warm, and this one compiles as from a fresh process."""
    try:
        from torch._dynamo import pgo
    except ImportError:  # before 2.6: automatic dynamic's sizes are per code object
        pass
    else:
        pgo.reset_code_state()
    tensorify = getattr(torch._dynamo, "TensorifyState", None)
    if tensorify is not None and hasattr(tensorify, "clear"):
        tensorify.clear()


def clear_compilation_metrics() -> None:
    """Forget the metrics of earlier compilations (``torch._dynamo.reset()`` keeps them)."""
    clear = getattr(torch._dynamo.utils, "clear_compilation_metrics", None)
    if clear is not None:
        clear()


def compilation_metrics() -> list[dict[str, object]]:
    """torch's record of each frame compiled since the last clear (2.8 to 2.15 keep one), as
    the structured trace's ``compilation_metrics`` fields."""
    get = getattr(torch._dynamo.utils, "get_compilation_metrics", None)
    out = []
    for m in get() if get is not None else []:
        try:
            out.append(dict(vars(m)))
        except TypeError:  # a slotted record: no __dict__
            out.append({k: getattr(m, k, None) for k in getattr(m, "__slots__", ())})
    return out


@contextlib.contextmanager
def without_guard_latency_profile() -> Iterator[None]:
    """Compiles without torch's guard-latency profile. After each frame's compile, torch
    2.x times the new guards once after flushing the CPU cache (``profile_guard_manager``,
    ~14 ms a frame on a 2-core machine, a fifth of a small model's explain) for one metric,
    ``guard_latency_us``, that the analysis never reads. Where torch has no such function
    (an older or newer layout), nothing changes."""
    guards = torch._dynamo.guards
    real = getattr(guards, "profile_guard_manager", None)
    if real is None:
        yield
        return
    guards.profile_guard_manager = lambda *_args, **_kwargs: 0.0
    try:
        yield
    finally:
        guards.profile_guard_manager = real
