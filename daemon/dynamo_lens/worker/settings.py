"""torch's compiler settings (``torch._dynamo.config``, ``torch._inductor.config``) saved and
put back: user code may set them at import, and a warm worker must not carry one file's
settings into another file's analysis, nor a shadow's into the original's."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import torch
import torch._inductor.config as inductor_config

Saved = list[tuple[Any, bytes, dict[str, Any]]]


def save() -> Saved:
    return [(m, m.save_config(), _containers(m)) for m in (torch._dynamo.config, inductor_config)]


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
    return b"".join(data + repr(sorted(map(repr, c.items()))).encode() for _, data, c in save())


def restore(saved: Saved) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # load_config re-sets deprecated keys, which warn
        for module, data, containers in saved:
            if module.save_config() != data:  # saving is ~20x cheaper than loading
                module.load_config(data)
            for key, value in containers.items():
                if getattr(module, key) != value:
                    setattr(module, key, copy.copy(value))


# Taken before any user code runs: each file starts from torch's own settings, so a file that
# sets `torch._dynamo.config.*` at import affects its own analysis and no other file's.
PRISTINE = save()
