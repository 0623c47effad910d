"""The command line's check lists: what ``check --checks`` and ``fix --checks`` accept, and
which checks ``fix`` runs where the command line names none (the workspace's)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .config import ALL_CHECKS

CLI_CHECKS = (*ALL_CHECKS, "static")

# What ``fix`` has rewrites for. ``--checks breaks`` leaves out the recompile check: on a model
# called in a decode loop it is most of the analysis (its probes run the whole loop again).
FIX_CHECKS = ("breaks", "recompiles")


def checks_arg(value: str) -> list[str]:
    items = [c.strip() for c in value.split(",") if c.strip()]
    if items == ["all"]:
        return list(ALL_CHECKS)
    bad = [c for c in items if c not in CLI_CHECKS]
    if bad or not items:
        raise argparse.ArgumentTypeError(
            f"unknown check(s) {', '.join(bad) or '(none)'}; choose from {', '.join(CLI_CHECKS)}"
        )
    return items


def fix_checks_arg(value: str) -> tuple[str, ...]:
    items = {c.strip() for c in value.split(",") if c.strip()}
    if items == {"all"}:
        return FIX_CHECKS
    bad = sorted(items - set(FIX_CHECKS))
    if bad or not items:
        raise argparse.ArgumentTypeError(
            f"fix has rewrites for {' and '.join(FIX_CHECKS)}, not {', '.join(bad) or '(none)'}"
        )
    return tuple(c for c in FIX_CHECKS if c in items)  # one order: one cache key


def fix_checks_of(workspace: Sequence[str]) -> tuple[str, ...]:
    """The checks ``fix`` runs without ``--checks``: those of the workspace's ``checks``
    setting it has rewrites for (a workspace that leaves out the recompile check, whose probes
    are slow on its models, is not made to run them to fix its breaks). Raises ValueError
    where that is none."""
    mine = tuple(c for c in FIX_CHECKS if c in workspace)
    if not mine:
        raise ValueError(
            f"the workspace's checks ({', '.join(workspace) or 'none'}) include none that fix has "
            f"rewrites for ({', '.join(FIX_CHECKS)}): pass --checks"
        )
    return mine
