"""`dynamo-lens check example_workspace --format json` finds every marked break and recompile
at its line, with the right graph-break id, and nothing else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, check_json, expectations

WS = REPO / "example_workspace"
KIND = {
    ("graph_break", "warning"): "graph_break",
    ("fallback", "warning"): "fallback",
    ("recompile", "warning"): "recompile-warning",
    ("recompile", "information"): "recompile-info",
}


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    rc, d, err = check_json(str(WS), "--checks", "breaks,recompiles")
    assert rc == 1, err
    return d


def _found(d: dict[str, Any]) -> set[tuple[str, int, str, str | None]]:
    out = set()
    for f in d["findings"]:
        kind = KIND.get((f["kind"], f["severity"]), f"{f['kind']}-{f['severity']}")
        rel = str(Path(f["path"]).relative_to(WS)) + (f"#cell{f['cell']}" if "cell" in f else "")
        with_id = f["kind"] in ("graph_break", "fallback")
        out.add((rel, f["line"], kind, f["gb_id"] if with_id else None))
    return out


def test_every_marker_is_found_at_its_line_and_nothing_else(doc: dict[str, Any]) -> None:
    expected = {(p, line, kind, detail) for p, line, kind, detail in expectations(WS)}
    assert expected, "example_workspace has no # expect: markers"
    assert _found(doc) == expected


def test_clean_models_report_nothing(doc: dict[str, Any]) -> None:
    for name in ("models/clean_mlp.py", "models/zero_config.py"):
        assert [f for f in doc["findings"] if f["path"].endswith(name)] == []
    clean = [t for t in doc["targets"] if t["path"].endswith("clean_mlp.py")]
    assert len(clean) == 2
    for t in clean:
        assert t["graph_count"] == 1 and t["break_count"] == 0 and t["recompile_count"] == 0


def test_break_in_helper_is_on_the_helper_line_with_the_caller_as_related(
    doc: dict[str, Any],
) -> None:
    (f,) = [f for f in doc["findings"] if f["path"].endswith("common.py")]
    assert f["gb_id"] == "GB0170"
    assert f["doc_url"].endswith("/gb/gb0170.html")
    assert f["explanation"] and f["hints"]
    callers = [Path(fr["path"]).name for fr in f["stack"]]
    assert callers[-1] == "common.py" and "cnn.py" in callers
    assert f["end_column"] > f["column"]


def test_repeated_recompile_names_the_fix_and_the_values(doc: dict[str, Any]) -> None:
    (f,) = [f for f in doc["findings"] if f["path"].endswith("moe_router.py") and f["line"] == 32]
    assert f["data"]["guard_kind"] == "value" and f["data"]["variable"] == "num_active"
    assert f["data"]["recompiles"] == 2
    assert any("tensor" in h for h in f["hints"])


def test_mark_dynamic_names_an_argument_only_of_the_targets_own_frame(doc: dict[str, Any]) -> None:
    def marked(name: str, line: int) -> dict[str, Any]:
        (f,) = [f for f in doc["findings"] if f["path"].endswith(name) and f["line"] == line]
        return dict(f["data"]["mark_dynamic"])

    # The block's own input: its position in the example's calls, and which calls are its.
    assert marked("transformer_block.py", 45) == {
        "variable": "x",
        "dim": 1,
        "arg": 0,
        "calls": [0, 1, 2],
    }
    # An expert's `x`, called from the layer's skipped frame, is not the layer's `x`: no
    # position, so no call-site edit marks the wrong tensor.
    assert marked("moe_router.py", 15) == {"variable": "x", "dim": 0}


def test_zero_config_guess_is_analysed_and_labelled(doc: dict[str, Any]) -> None:
    (t,) = [t for t in doc["targets"] if t["path"].endswith("zero_config.py")]
    assert t["guess"] is True and t["target"].endswith("guess:TabularClassifier")
    assert t["input_shapes"] == ["x: float32[2, 16]"]


def test_sarif_and_text_outputs(tmp_path: Path) -> None:
    from conftest import run_cli

    rc, out, err = run_cli(
        "check", str(WS / "models" / "cnn.py"), "--checks", "breaks", "--format", "sarif"
    )
    assert rc == 1, err
    import json

    sarif = json.loads(out)
    (res,) = sarif["runs"][0]["results"]
    assert res["ruleId"] == "GB0170"
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "models/common.py"
    rc, out, _ = run_cli("check", str(WS / "models" / "clean_mlp.py"), "--checks", "breaks")
    assert rc == 0
    assert out.strip().endswith("1 file(s), 2 target(s), 0 finding(s)")
