"""torch's compiler settings (``torch._dynamo.config``, ``torch._inductor.config``) and the rest
of the process state user code may set (the environment, torch's deterministic-algorithms flag,
global module hooks) saved and put back: user code may set them at import, and a warm worker
must not carry one file's settings into another file's analysis, nor a shadow's into the
original's, nor one version of a file's into the next (a line removed must take its setting
with it)."""

from __future__ import annotations

import contextlib
import copy
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch._inductor.config as inductor_config
import torch.nn.modules.module as nn_module

# The module-wide hooks `register_module_forward_hook` and its kind add: dicts in nn.Module's
# module (``_global_is_full_backward_hook`` is a flag, or None).
_HOOKS = [
    name
    for name in dir(nn_module)
    if name.startswith("_global_") and isinstance(getattr(nn_module, name), dict)
]


@dataclass
class Saved:
    configs: list[tuple[Any, bytes, dict[str, Any]]]
    environ: dict[str, str]
    deterministic: tuple[bool, bool]
    hooks: dict[str, dict[Any, Any]]
    full_backward: Any


def save() -> Saved:
    return Saved(
        [(m, m.save_config(), _containers(m)) for m in (torch._dynamo.config, inductor_config)],
        dict(os.environ),
        (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
        ),
        {name: dict(getattr(nn_module, name)) for name in _HOOKS},
        getattr(nn_module, "_global_is_full_backward_hook", None),
    )


def _containers(module: Any) -> dict[str, Any]:
    """The settings that are sets, lists and dicts, copied: ``save_config`` leaves out one
    changed in place (``reorderable_logging_functions.add(print)`` is still the default
    object, and some are not saved at all), which would then stay in a warm worker."""
    return {
        k: copy.copy(v)
        for k, v in module.get_config_copy().items()
        if isinstance(v, (set, list, dict))
    }


def fingerprint() -> bytes:
    """The settings now, as bytes that differ where any setting does."""
    now = save()
    out = b"".join(data + repr(sorted(map(repr, c.items()))).encode() for _, data, c in now.configs)
    hooks = {name: len(h) for name, h in now.hooks.items()}
    return out + repr((sorted(now.environ.items()), now.deterministic, hooks)).encode()


def restore(saved: Saved) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # load_config re-sets deprecated keys, which warn
        for module, data, containers in saved.configs:
            if module.save_config() != data:  # saving is ~20x cheaper than loading
                module.load_config(data)
            for key, value in containers.items():
                if getattr(module, key) != value:
                    setattr(module, key, copy.copy(value))
        if dict(os.environ) != saved.environ:
            os.environ.clear()
            os.environ.update(saved.environ)
        if (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
        ) != saved.deterministic:
            torch.use_deterministic_algorithms(
                saved.deterministic[0], warn_only=saved.deterministic[1]
            )
        for name, hooks in saved.hooks.items():
            now = getattr(nn_module, name)
            if now != hooks:
                now.clear()
                now.update(hooks)
        if hasattr(nn_module, "_global_is_full_backward_hook"):
            nn_module._global_is_full_backward_hook = saved.full_backward


# Taken before any user code runs: each file starts from torch's own settings, so a file that
# sets `torch._dynamo.config.*` at import affects its own analysis and no other file's.
PRISTINE = save()


@contextlib.contextmanager
def under(saved: Saved) -> Iterator[None]:
    """``saved`` in place while open, and what was in place before put back after (the
    original's settings for a moment, within a shadow's)."""
    now = save()
    restore(saved)
    try:
        yield
    finally:
        restore(now)
