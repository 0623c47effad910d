"""Pure-Python parts of the real-code fixes: guess policy, finding ranges, library paths."""

from __future__ import annotations

from pathlib import Path

from dynamo_lens.engine.declarations import Declarations
from dynamo_lens.findings import Finding, Kind, Severity
from dynamo_lens.texts.locate import display_path, is_plumbing


def test_a_workspace_that_declares_nothing_guesses_everywhere(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("class A(nn.Module):\n    pass\n")
    assert Declarations(tmp_path, []).guess_policy(b"class A(nn.Module):\n") == (True, [])


def test_once_anything_is_declared_only_unused_classes_are_guessed(tmp_path: Path) -> None:
    (tmp_path / "example.py").write_text("from blocks import Block\n\ndef compile_example():\n")
    blocks = b"class Block(nn.Module):\n    pass\n\nclass Top(nn.Module):\n    pass\n"
    (tmp_path / "blocks.py").write_bytes(blocks)
    decl = Declarations(tmp_path, [])
    assert decl.guess_policy(blocks) == (True, ["Block"])  # Top: used by nothing
    (tmp_path / "example.py").write_text("from blocks import Block, Top\ndef compile_example():\n")
    assert decl.guess_policy(blocks) == (False, ["Block", "Top"])  # rescanned: it changed


def test_inverted_ranges_collapse_onto_their_start() -> None:
    f = Finding(Kind.GRAPH_BREAK, Severity.WARNING, "/w/m.py", 7, 12, 6, 3, "m")
    assert (f.line, f.column, f.end_line, f.end_column) == (7, 12, 7, 13)
    ok = Finding(Kind.GRAPH_BREAK, Severity.WARNING, "/w/m.py", 7, 1, 9, 3, "m")
    assert (ok.end_line, ok.end_column) == (9, 3)


def test_library_paths_read_as_users_know_them() -> None:
    venv = "/home/u/.venv/lib/python3.11/site-packages/torch/nn/modules/transformer.py"
    assert display_path(venv) == "torch/nn/modules/transformer.py"
    assert display_path("/usr/lib/python3.11/logging/__init__.py") == "logging/__init__.py"
    assert is_plumbing("/x/site-packages/torch/_dynamo/eval_frame.py")
    assert is_plumbing("<string>")
    assert not is_plumbing("/x/site-packages/transformers/modeling_utils.py")


def test_related_locations_show_callers_and_the_library_line() -> None:
    from dynamo_lens.findings import FileResult, Frame
    from dynamo_lens.report.sarif import document

    lib = "/venv/lib/python3.11/site-packages/transformers/modeling_utils.py"
    stack = [
        Frame("/w/example.py", 10, "compile_example"),
        Frame("/venv/lib/python3.11/site-packages/transformers/gpt2.py", 703, "forward"),
        Frame(lib, 4778, "loss_function"),
    ]
    f = Finding(Kind.GRAPH_BREAK, Severity.WARNING, "/w/example.py", 10, 5, 10, 9, "m", stack=stack)
    labels = [(fr.line, label) for fr, label in f.related()]
    assert labels == [(703, "then in forward"), (4778, "torch stopped here, in loss_function")]
    doc = document([FileResult("/w/example.py", "h", findings=[f])], Path("/w"))
    (res,) = doc["runs"][0]["results"]
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "example.py"
    rel = res["relatedLocations"][-1]["physicalLocation"]["artifactLocation"]
    assert rel == {"uri": "file://" + lib}  # outside the workspace: absolute, no %SRCROOT%
