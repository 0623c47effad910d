"""Fingerprints (report/fingerprint.py): the identity baselines, ``diff`` and SARIF match on.
They survive line moves, unrelated renames and reformatting, and change with the finding's own
statement. Torch-free."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from dynamo_lens.findings import Finding, Kind, Severity
from dynamo_lens.report.fingerprint import assign, locate

MODEL = textwrap.dedent(
    """\
    import torch


    class Model(torch.nn.Module):
        def forward(self, x):
            if x.mean() > 0:  # the break
                x = x * 2
            y = x.sum().item()
            return x + y
    """
)


def _finding(path: Path, line: int, kind: Kind = Kind.GRAPH_BREAK, gb: str = "GB0170") -> Finding:
    return Finding(kind, Severity.WARNING, str(path), line, 5, line, 10, "Graph break", gb_id=gb)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def _fp(tmp_path: Path, text: str, needle: str, name: str = "model.py", **kw: object) -> str:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    path = ws / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    f = _finding(path, _line_of(text, needle), **kw)  # type: ignore[arg-type]
    assign([f], ws)
    return f.fingerprint


def test_locate_names_the_scope_and_the_statement() -> None:
    assert locate(ast.parse(MODEL), 6) == ("Model.forward", "if x.mean() > 0")
    assert locate(ast.parse(MODEL), 8) == ("Model.forward", "y = x.sum().item()")
    assert locate(ast.parse(MODEL), 1) == ("<module>", "import torch")


def test_a_fingerprint_survives_moves_renames_and_reformatting(tmp_path: Path) -> None:
    base = _fp(tmp_path, MODEL, "x.mean()")
    moved = "# a header\n\n\n" + MODEL.replace(
        "class Model", "def helper():\n    pass\n\n\nclass Model"
    )
    renamed = MODEL.replace("y = x.sum().item()", "total = x.sum().item()").replace(
        "x + y", "x + total"
    )
    reformatted = MODEL.replace(
        "if x.mean() > 0:  # the break", "if (\n                x.mean()  >  0\n            ):"
    )
    for variant in (moved, renamed, reformatted):
        assert _fp(tmp_path, variant, "x.mean()") == base, variant


def test_a_fingerprint_changes_with_its_own_statement_scope_path_and_kind(tmp_path: Path) -> None:
    base = _fp(tmp_path, MODEL, "x.mean()")
    assert _fp(tmp_path, MODEL.replace("x.mean() > 0", "x.mean() > 1"), "x.mean()") != base
    assert _fp(tmp_path, MODEL.replace("def forward", "def step"), "x.mean()") != base
    assert _fp(tmp_path, MODEL, "x.mean()", name="other.py") != base
    assert _fp(tmp_path, MODEL, "x.mean()", gb="GB0124") != base
    assert _fp(tmp_path, MODEL, "x.mean()", kind=Kind.RECOMPILE) != base


def test_repeated_statements_are_told_apart_by_their_order(tmp_path: Path) -> None:
    text = MODEL.replace("            y = x.sum().item()\n", "            y = x.sum().item()\n" * 2)
    path = tmp_path / "m.py"
    path.write_text(text)
    first = _line_of(text, "item()")
    a, b = _finding(path, first, gb="GB0124"), _finding(path, first + 1, gb="GB0124")
    assign([b, a], tmp_path)
    assert a.fingerprint and b.fingerprint and a.fingerprint != b.fingerprint
    # One more line above both: each keeps its own.
    path.write_text("\n" + text)
    a2, b2 = _finding(path, first + 1, gb="GB0124"), _finding(path, first + 2, gb="GB0124")
    assign([a2, b2], tmp_path)
    assert (a2.fingerprint, b2.fingerprint) == (a.fingerprint, b.fingerprint)


def test_a_finding_without_readable_source_is_fingerprinted_by_its_message(
    tmp_path: Path,
) -> None:
    gone = tmp_path / "deleted.py"
    a, b = _finding(gone, 3), _finding(gone, 30)
    assign([a], tmp_path)
    assign([b], tmp_path)
    assert a.fingerprint == b.fingerprint  # the line is not part of it
    bad = tmp_path / "broken.py"
    bad.write_text("def (:\n")
    c = _finding(bad, 1)
    assign([c], tmp_path)
    assert c.fingerprint


DECORATED = textwrap.dedent(
    """\
    import torch


    class M:
        @torch.compile
        def a(self, x):
            return x

        @torch.compile
        def b(self, x):
            return x


    @torch.compile
    def f(x):
        return x
    """
)


def test_a_decorator_line_belongs_to_its_function() -> None:
    # torch puts a guard on an argument at the function's first line: its first decorator.
    tree = ast.parse(DECORATED)
    assert locate(tree, 5) == ("M.a", "def a(self, x)")
    assert locate(tree, 9) == ("M.b", "def b(self, x)")
    assert locate(tree, 14) == ("f", "def f(x)")


def test_guards_on_one_line_are_told_apart(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(DECORATED)
    a, b = (
        Finding(Kind.RECOMPILE, Severity.WARNING, str(path), 14, 1, 14, 2, "Recompile", data=d)
        for d in ({"guard_kind": "dtype", "variable": "x"}, {"guard_kind": "size", "variable": "x"})
    )
    assign([a], tmp_path)
    assign([b], tmp_path)
    assert a.fingerprint != b.fingerprint
