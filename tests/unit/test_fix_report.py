"""``fix``'s report says the other rewrites it tried for a break, and what refused each: a
user who expected ``mark_dynamic`` learns it raised, or was slower once warm."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from dynamo_lens.report import fixout


def _fix(refused: list[dict[str, object]]) -> SimpleNamespace:
    finding = SimpleNamespace(
        path="/w/m.py", line=3, data={}, gb_id=None, message="Recompile: the size of `x` changed"
    )
    rewrite = SimpleNamespace(rule="maybe-mark-dynamic", title="Mark dim 0 of `x` dynamic")
    return SimpleNamespace(
        finding=finding,
        rewrite=rewrite,
        targets=["m.py::compile_example"],
        verified=True,
        claim="equivalent",
        applicable=True,
        checks=[],
        why="",
        refused=refused,
        seconds=0.5,
        diff="",
    )


def test_a_rewrite_also_tried_and_refused_is_said_in_text_and_json() -> None:
    refused = [{"rule": "mark-dynamic", "failed": ["calls still run"], "why": "raised"}]
    fix = _fix(refused)
    text = fixout.render([fix], [], [], Path("/w"))
    assert "  also tried: mark-dynamic, refused (calls still run)" in text.splitlines()
    assert fixout.fix_dict(fix, Path("/w"))["refused"] == refused


def test_nothing_else_tried_says_nothing() -> None:
    text = fixout.render([_fix([])], [], [], Path("/w"))
    assert "also tried" not in text
