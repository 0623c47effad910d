"""Notebooks without torch: cells read with nbformat (v3 and v4), IPython syntax made Python line
for line, findings put back on their cell and line, and the cell in text, JSON and SARIF."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from dynamo_lens.findings import (
    FileResult,
    Finding,
    Frame,
    Kind,
    NotebookRun,
    Severity,
    TargetReport,
    to_wire,
)
from dynamo_lens.notebooks.cellmap import CellMap
from dynamo_lens.notebooks.cells import NotebookError, read_cells
from dynamo_lens.notebooks.program import _plain_transform, build
from dynamo_lens.report import fingerprint, sarif, text
from dynamo_lens.report.jsonout import document

NO_TORCH = (
    "import sys; sys.modules['torch'] = None; "
    "from dynamo_lens.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _notebook(path: Path, *cells: tuple[str, str]) -> Path:
    nb = nbformat.v4.new_notebook()
    make = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell}
    nb.cells = [make[kind](src) for kind, src in cells]
    nbformat.write(nb, path)
    return path


def _program(tmp_path: Path, *cells: tuple[str, str]):  # type: ignore[no-untyped-def]
    path = _notebook(tmp_path / "m.ipynb", *cells)
    return build(read_cells(path), path.name, str(tmp_path))


def test_code_cells_run_in_order_and_every_line_maps_back_to_its_cell(tmp_path: Path) -> None:
    prog = _program(
        tmp_path,
        ("markdown", "# Title\\nsome text"),
        ("code", "%matplotlib inline\nimport math\nx = !ls"),
        ("code", ""),
        ("code", "%%time\ny = math.pi\nz = y * 2"),
        ("code", "def broken(:\n    pass"),
        ("code", "%%bash\necho hi"),
        ("code", "w = z + 1"),
    )
    lines = prog.text.split("\n")
    placed = {prog.to_cell(i): lines[i - 1] for i in range(1, len(lines)) if prog.to_cell(i)}
    assert placed[(2, 2)] == "import math"
    assert placed[(4, 2)] == "y = math.pi" and placed[(4, 3)] == "z = y * 2"
    assert placed[(7, 1)] == "w = z + 1"
    assert not any(cell in (5, 6) for cell, _ in placed)  # left out: a syntax error, %%bash
    assert prog.cells == 7 and prog.code_cells == 6
    assert [(n.cell, n.line) for n in prog.notes] == [(2, 1), (2, 3), (4, 1)]
    assert [(n.cell, n.what) for n in prog.left_out] == [
        (6, "%%bash is not Python: the cell was not run")
    ]
    ((error, column),) = prog.syntax_errors
    assert (error.cell, error.line, column) == (5, 1, 12) and "SyntaxError" in error.what
    # The program runs: magics do nothing, a shell line binds [] (IPython's transformer).
    scope: dict[str, object] = {}
    exec(compile(prog.text, "m.ipynb.py", "exec"), scope)
    assert scope["x"] == [] and scope["w"] == pytest.approx(2 * 3.141592653589793 + 1)


def test_without_ipython_magic_and_shell_lines_become_pass_line_for_line() -> None:
    src = "%matplotlib inline\nfiles = !ls\nif True:\n    %time y = 1\n    z = 2\nlen?"
    out = _plain_transform(src)
    assert out.split("\n") == [
        "pass",
        "files = []",
        "if True:",
        "    pass",
        "    z = 2",
        "pass",
    ]


def test_an_nbformat_v3_notebook_is_read_with_its_cells_in_order(tmp_path: Path) -> None:
    v3 = {
        "nbformat": 3,
        "nbformat_minor": 0,
        "metadata": {"name": ""},
        "worksheets": [
            {
                "cells": [
                    {"cell_type": "markdown", "source": "# old", "metadata": {}},
                    {
                        "cell_type": "code",
                        "input": "import math\nr = math.e",
                        "language": "python",
                        "outputs": [],
                        "collapsed": False,
                        "metadata": {},
                    },
                ],
                "metadata": {},
            }
        ],
    }
    path = tmp_path / "old.ipynb"
    path.write_text(json.dumps(v3))
    cells = read_cells(path)
    assert [(c.index, c.kind, c.source) for c in cells] == [
        (1, "markdown", "# old"),
        (2, "code", "import math\nr = math.e"),
    ]


@pytest.mark.parametrize(
    "content",
    ["{", "[]", '{"cells": 3}', '{"nbformat": 4, "nbformat_minor": 5, "cells": [{}]}', "\xff"],
)
def test_a_file_that_is_not_a_notebook_is_one_clear_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.ipynb"
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(NotebookError) as err:
        read_cells(path)
    # One line; the finding that says it is placed on the file (its path is not repeated).
    message = str(err.value)
    assert "\n" not in message and str(path) not in message
    assert message.startswith(("not a valid notebook", "cannot read it")), message


def test_a_five_megabyte_output_is_not_read_as_code(tmp_path: Path) -> None:
    path = _notebook(tmp_path / "big.ipynb", ("code", "import math"))
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * (5 << 20))]
    nbformat.write(nb, path)
    assert path.stat().st_size > 5 << 20
    prog = build(read_cells(path), path.name, str(tmp_path))
    assert "x" * 100 not in prog.text and "import math" in prog.text  # outputs are not code


def _mapped(tmp_path: Path) -> tuple[FileResult, Path]:
    path = _notebook(
        tmp_path / "m.ipynb",
        ("markdown", "# m"),
        ("code", "import math"),
        ("code", "def f(x):\n    print(x)\n    return x"),
    )
    prog = build(read_cells(path), path.name, str(tmp_path))
    shadow = tmp_path / "cache" / "m.ipynb.py"
    shadow.parent.mkdir()
    shadow.write_text(prog.text)
    line = prog.line_of(3, 2)
    assert line is not None
    f = Finding(Kind.GRAPH_BREAK, Severity.WARNING, str(shadow), line, 5, line, 13, "Graph break")
    f.stack = [Frame(str(shadow), line, "f")]
    f.target = f"{shadow}::f@{prog.line_of(3, 1)}"
    cmap = CellMap(prog, str(shadow), str(path), "m.ipynb")
    res = cmap.result(FileResult(str(shadow), "h", findings=[f]), "h", NotebookRun(3, 2))
    return res, path


def test_a_finding_in_the_program_lands_on_its_cell_and_line(tmp_path: Path) -> None:
    res, path = _mapped(tmp_path)
    (f,) = res.findings
    assert (f.path, f.cell, f.line, f.column) == (str(path), 3, 2, 5)
    assert (f.stack[0].path, f.stack[0].cell, f.stack[0].line) == (str(path), 3, 2)
    assert f.target == "m.ipynb::f@cell3:1"
    assert text.line_for(f, tmp_path).startswith("m.ipynb:cell 3:2:5: warning: Graph break")
    wire = document([res], {})["findings"][0]
    assert (wire["cell"], wire["line"]) == (3, 2)
    region = sarif.document([res], tmp_path)["runs"][0]["results"][0]["locations"][0]
    assert region["physicalLocation"]["region"]["properties"] == {"cell": 3}
    assert region["physicalLocation"]["artifactLocation"]["uri"] == "m.ipynb"
    # A file's findings, frames, targets and results carry no notebook fields at all.
    plain = Finding(Kind.ERROR, Severity.ERROR, "a.py", 1, 1, 1, 2, "m", stack=[Frame("a.py", 1)])
    report = TargetReport("a.py::f", "a.py", 1, "example", findings=[plain])
    wire = json.dumps(to_wire(FileResult("a.py", "", reports=[report], findings=[plain])))
    assert not any(k in wire for k in ('"cell"', '"execution_count"', '"notebook"')), wire


def test_a_cells_fingerprint_survives_a_cell_inserted_above(tmp_path: Path) -> None:
    res, path = _mapped(tmp_path)
    (f,) = res.findings
    fingerprint.assign([f], tmp_path)
    before = f.fingerprint
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(1, nbformat.v4.new_code_cell("import os"))
    nbformat.write(nb, path)
    f.cell = 4
    fingerprint.assign([f], tmp_path)
    assert f.fingerprint == before


def test_check_static_puts_hints_on_cells_without_torch(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    _notebook(
        tmp_path / "m.ipynb",
        ("markdown", "# m"),
        ("code", "%matplotlib inline\nimport torch"),
        ("code", "class M(torch.nn.Module):\n    def forward(self, x):\n        return x.item()"),
    )
    p = subprocess.run(
        [sys.executable, "-c", NO_TORCH, "check", "m.ipynb", "--checks", "static"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    assert "m.ipynb:cell 3:3:" in p.stdout, p.stdout
    assert "m.ipynb:cell 2:1: `%matplotlib inline` is IPython syntax" in p.stderr, p.stderr


def test_what_ipython_accepts_runs_and_what_only_compiling_rejects_is_left_out(
    tmp_path: Path,
) -> None:
    prog = _program(
        tmp_path,
        ("code", "from __future__ import annotations\nimport math"),
        ("code", "\n%%bash\necho hi"),  # a cell magic after a blank line is still one
        ("code", "for i in range(2):\n    pass\nbreak"),  # parses; only compiling rejects it
        ("code", "%time r = math.sqrt(4)\n%timeit -n 3 -r 1 s = r + 1"),
        ("code", "display(r)\nt = s * 2"),
    )
    assert [(n.cell, n.line) for n in prog.left_out] == [(2, 2)]
    ((error, _),) = prog.syntax_errors
    assert (error.cell, error.line) == (3, 3) and "outside loop" in error.what
    assert [n.what for n in prog.notes if n.cell == 4] == [
        "`%time r = math.sqrt(4)` ran untimed",
        "`%timeit -n 3 -r 1 s = r + 1` ran untimed",
    ]
    assert prog.text.split("\n")[1] == "from __future__ import annotations"
    scope: dict[str, object] = {}
    exec(compile(prog.text, "m.ipynb.py", "exec"), scope)
    assert scope["t"] == 6.0  # %time's statements ran, display() is defined
    lines = prog.text.split("\n")
    assert lines[prog.line_of(4, 1) - 1] == "r = math.sqrt(4)"  # type: ignore[operator]


def test_without_ipython_a_continued_shell_line_takes_its_continuation_with_it() -> None:
    src = "!pip install \\\n    torch\nx = 1\nif x:\n    y = 2"
    assert _plain_transform(src).split("\n") == ["pass", "", "x = 1", "if x:", "    y = 2"]


def test_a_top_level_await_is_left_out_and_a_docstring_may_precede_a_future_import(
    tmp_path: Path,
) -> None:
    prog = _program(
        tmp_path,
        ("code", '"""Notes."""\nfrom __future__ import annotations\nimport math'),
        ("code", "import asyncio\nawait asyncio.sleep(0)"),
        ("code", "%prun -s cumulative math.sqrt(4)\nr = math.pi"),
    )
    assert [(n.cell, n.line) for n in prog.left_out] == [(2, 2)], prog.left_out
    assert "top-level await" in prog.left_out[0].what and not prog.syntax_errors
    # %prun's options are words: the line does nothing, it is not run with them.
    assert [n.what for n in prog.notes if n.cell == 3] == [
        "`%prun -s cumulative math.sqrt(4)` is IPython syntax: it did nothing here"
    ]
    scope: dict[str, object] = {}
    exec(compile(prog.text, "m.ipynb.py", "exec"), scope)
    assert scope["r"] == pytest.approx(3.141592653589793)
