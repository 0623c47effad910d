"""torch's compiler settings (``torch._dynamo.config``, ``torch._inductor.config``) saved and
put back: user code may set them at import, and a warm worker must not carry one file's
settings into another file's analysis, nor a shadow's into the original's."""

from __future__ import annotations

import warnings
from typing import Any

import torch
import torch._inductor.config as inductor_config

Saved = list[tuple[Any, bytes]]


def save() -> Saved:
    return [(m, m.save_config()) for m in (torch._dynamo.config, inductor_config)]


def restore(saved: Saved) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # load_config re-sets deprecated keys, which warn
        for module, data in saved:
            if module.save_config() != data:  # saving is ~20x cheaper than loading
                module.load_config(data)


# Taken before any user code runs: each file starts from torch's own settings, so a file that
# sets `torch._dynamo.config.*` at import affects its own analysis and no other file's.
PRISTINE = save()
