"""One edit that removes several breaks of a file: its verdict is theirs too (engine/fixing.py,
``Verdict.gone``), with the checks each break would get, not a verification per break."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from support.fix_workspace import breaks_in, eager_workspace, fix_json, here

TWO_ITEMS = """import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        s = x.abs().max().item()  # here: first
        h = self.lin(x) / (s + 1.0)
        t = h.abs().sum().item()  # here: second
        return h * (t + 1.0)


def compile_example():
    torch.manual_seed(0)
    return Scaled(), (torch.randn(3, 4),)
"""


def test_one_setting_that_removes_two_breaks_is_verified_once_for_both(tmp_path: Path) -> None:
    """A verified rewrite that removes the file's other breaks too is their verdict as well:
    the same checks but for the site, not a second verification of the same edit."""
    ws = eager_workspace(tmp_path, two_items=TWO_ITEMS)
    first, second = here(ws, "two_items.py", "first"), here(ws, "two_items.py", "second")
    doc = fix_json(ws, "two_items.py")
    fixes = {f["line"]: f for f in cast(list[dict[str, Any]], doc["fixes"])}
    assert set(fixes) == {first, second}, fixes
    for line in (first, second):
        fix = fixes[line]
        assert fix["rule"] == "capture-setting" and fix["verified"], fix
        assert all(c["ok"] for c in fix["checks"]), fix["checks"]
    gone = {
        f["line"]: next(c for c in f["checks"] if c["name"] == "break gone") for f in fixes.values()
    }
    assert gone[second]["detail"] == f"with the break at line {first}, by the same edit"
    assert gone[first]["detail"] == ""
    # Applied once: one edit, and torch breaks at neither line.
    doc = fix_json(ws, "two_items.py", "--apply")
    assert len(cast(list[object], doc["applied"])) == 1
    assert breaks_in(ws, "two_items.py") == []
