"""Snippets for the static-hint tests: a header of the imports model code uses, and checks
that hints sit exactly on the lines marked ``# HINT``."""

from __future__ import annotations

import textwrap

from dynamo_lens.static import analyze_source

HEADER = """\
import copy
import datetime
import logging
import math
import os
import pdb
import random
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger(__name__)
"""


def snippet(body: str) -> str:
    return HEADER + textwrap.dedent(body)


def hints_for(body: str, path: str = "/ws/model.py"):  # type: ignore[no-untyped-def]
    return analyze_source(snippet(body), path)


def check(body: str, rule: str | None = None, gb: str | None = None) -> None:
    """Hints exactly on the ``# HINT`` lines (with ``rule``/``gb`` when given), nowhere else."""
    src = snippet(body)
    expected = {i for i, ln in enumerate(src.splitlines(), 1) if ln.rstrip().endswith("# HINT")}
    found = analyze_source(src, "/ws/model.py")
    got = {h.line for h in found}
    detail = [(h.line, h.data["rule"], h.gb_id, h.message) for h in found]
    assert got == expected, detail
    for h in found:
        if rule is not None:
            assert h.data["rule"] == rule, detail
        if gb is not None:
            assert h.gb_id == gb, detail


def module(forward_body: str, params: str = "x", init: str = "", extra: str = "") -> str:
    """A module whose forward runs ``forward_body`` (a zero-configuration target)."""
    init_body = textwrap.indent(textwrap.dedent(init), " " * 8) if init.strip() else ""
    fwd = textwrap.indent(textwrap.dedent(forward_body), " " * 8)
    return (
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 4)\n"
        f"{init_body}"
        f"    def forward(self, {params}):\n"
        f"{fwd}"
        f"{textwrap.dedent(extra)}"
    )
