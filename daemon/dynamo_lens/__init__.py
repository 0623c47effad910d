"""Dynamo Lens: torch.compile graph breaks, recompile risks, equivalence and timings.

The package itself is an IPython extension: ``%load_ext dynamo_lens`` in a kernel captures
what torch compiles from then on (kernel/extension.py). Importing it imports nothing else."""

from __future__ import annotations

from typing import Any

from .version import __version__

__all__ = ["__version__", "load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    from .kernel.extension import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .kernel.extension import unload

    unload(ipython)
