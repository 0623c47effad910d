"""Instant static hints: likely graph breaks from the source alone, reconciled with real runs.

Pure Python (``ast``); never imports torch, so the daemon can run it on every keystroke.
"""

from __future__ import annotations

from .analyzer import analyze_path, analyze_source, analyze_tree, reachable_functions
from .reconcile import Reconciler, function_hashes
from .rules import RULES, Rule

__all__ = [
    "RULES",
    "Reconciler",
    "Rule",
    "analyze_path",
    "analyze_source",
    "analyze_tree",
    "function_hashes",
    "reachable_functions",
]
