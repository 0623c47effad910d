"""``dynamo-lens check`` on notebooks, with torch: the breaks and recompiles torch reports for
the notebook's own compile calls land on their cell and line (torch's own logs, cell by cell,
are the ground truth: tests/fixtures/notebooks/truth.py); ``compile_example`` in a cell is a
target as in a file; a clean notebook is silent but lists what ran; a cell that raises is named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
from conftest import FIXTURES, check_json
from support.notebook_cells import CLEAN, SCALE

TRUTH = FIXTURES / "notebooks" / "truth.py"

IMPORTS = "%matplotlib inline\nimport torch\nfrom torch import nn"
CHATTY = """class Chatty(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        print("shape", y.shape)
        return y * 2"""
CALLS = """model = torch.compile(Chatty(), backend="eager")
out = model(torch.randn(4, 8))"""
GATE = """class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x - 1


def compile_example():
    return Gate(), (torch.randn(4, 8),)"""


def _write(root: Path, name: str, *cells: tuple[str, str]) -> Path:
    (root / "pyproject.toml").write_text('[tool.dynamo-lens]\nbackend = "eager"\n')
    nb = nbformat.v4.new_notebook()
    make = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell}
    nb.cells = [make[kind](src) for kind, src in cells]
    path = root / name
    nbformat.write(nb, path)
    return path


def _torchs(path: Path) -> set[tuple[str, int, int]]:
    out = subprocess.run(
        [sys.executable, str(TRUTH), str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=path.parent,
        timeout=600,
    )
    return {(k, c, ln) for k, c, ln in json.loads(out.stdout.strip().splitlines()[-1])}


def test_breaks_and_recompiles_torch_reports_land_on_their_cell_and_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "explore.ipynb",
        ("markdown", "# Exploring a model"),
        ("code", IMPORTS),
        ("code", CHATTY),
        ("code", CALLS),
        ("code", SCALE),
        ("code", CLEAN),
        ("code", ""),
    )
    truth = _torchs(path)
    assert {("graph_break", 3, 4), ("recompile", 5, 2)} <= truth, truth  # the fixture's point
    rc, doc, err = check_json(path.name, "--checks", "breaks,recompiles", cwd=tmp_path)
    ours = {
        (f["kind"], f["cell"], f["line"])
        for f in doc["findings"]
        if f["kind"] in ("graph_break", "recompile")
    }
    assert ours == truth, (doc["findings"], err)
    assert all(f["path"].endswith("explore.ipynb") for f in doc["findings"]), doc["findings"]
    (recompile,) = [f for f in doc["findings"] if f["kind"] == "recompile"]
    assert "2 recompiles" in recompile["message"], recompile  # torch's count: k = 1, then 2
    ran = {t["target"] for t in doc["targets"]}
    assert {"explore.ipynb::forward@cell3:2", "explore.ipynb::scale@cell5:1"} <= ran, ran
    assert "explore.ipynb::smooth@cell6:1" in ran, ran  # clean, and listed as run
    assert "explore.ipynb:cell 2:1: `%matplotlib inline` is IPython syntax" in err, err
    assert rc == 1  # warnings fail a check by default, as for a file


def test_compile_example_in_a_cell_is_a_target_and_a_clean_notebook_is_silent(
    tmp_path: Path,
) -> None:
    path = _write(
        tmp_path, "gate.ipynb", ("code", "import torch\nfrom torch import nn"), ("code", GATE)
    )
    _, doc, err = check_json(path.name, "--checks", "breaks", cwd=tmp_path)
    (brk,) = doc["findings"]
    assert (brk["kind"], brk["cell"], brk["line"]) == ("graph_break", 2, 3), doc["findings"]
    assert [t["target"] for t in doc["targets"]] == ["gate.ipynb::compile_example"], err
    clean = _write(tmp_path, "clean.ipynb", ("code", "import torch"), ("code", CLEAN))
    rc, doc, err = check_json(clean.name, "--checks", "breaks,recompiles", cwd=tmp_path)
    assert rc == 0 and doc["findings"] == [], (doc["findings"], err)
    assert [t["target"] for t in doc["targets"]] == ["clean.ipynb::smooth@cell2:1"]


def test_a_cell_that_raises_is_named_and_the_run_stops_there(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "raises.ipynb",
        ("code", "import torch"),
        ("markdown", "text"),
        ("code", "x = 1\nraise ValueError('bad data')"),
        ("code", CLEAN),
    )
    rc, doc, _ = check_json(path.name, cwd=tmp_path)
    errors = [f for f in doc["findings"] if f["kind"] == "error"]
    assert [(f["cell"], f["line"]) for f in errors] == [(3, 2)], doc["findings"]
    assert "ValueError: bad data" in errors[0]["message"] and "raises.ipynb.py" not in str(doc)
    assert rc == 1


def test_a_notebook_runs_from_its_folder_and_once(tmp_path: Path) -> None:
    """Relative paths are the notebook's, as in its kernel: a file of the same name at the
    workspace's root is never touched. A notebook that compiles its own model runs once (under
    the trace), not again in the worker for guesses: its side effects happen once."""
    (tmp_path / "notes.txt").write_text("the root's own file\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "data.csv").write_text("1,2,3\n")
    path = _write(
        tmp_path,
        "sub/rel.ipynb",
        ("code", "import torch\nfrom torch import nn"),
        (
            "code",
            'rows = open("data.csv").read().split(",")\n'
            'open("notes.txt", "w").write("written by the notebook\\n")\n'
            'with open("runs.log", "a") as log:\n'
            '    log.write("ran\\n")',
        ),
        ("code", CHATTY),
        ("code", CALLS),
    )
    _, doc, err = check_json(str(path.relative_to(tmp_path)), "--checks", "breaks", cwd=tmp_path)
    assert [(f["kind"], f["cell"], f["line"]) for f in doc["findings"]] == [
        ("graph_break", 3, 4)
    ], (doc["findings"], err)
    assert (tmp_path / "notes.txt").read_text() == "the root's own file\n"
    assert (sub / "notes.txt").read_text() == "written by the notebook\n"
    assert (sub / "runs.log").read_text() == "ran\n"


def test_a_compile_example_in_a_notebook_reads_files_beside_the_notebook(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "size.txt").write_text("8\n")
    path = _write(
        tmp_path,
        "sub/gate.ipynb",
        ("code", "import torch\nfrom torch import nn\nwidth = int(open('size.txt').read())"),
        ("code", GATE.replace("torch.randn(4, 8)", "torch.randn(4, width)")),
    )
    _, doc, err = check_json(str(path.relative_to(tmp_path)), "--checks", "breaks", cwd=tmp_path)
    assert [(f["kind"], f["cell"], f["line"]) for f in doc["findings"]] == [
        ("graph_break", 2, 3)
    ], (doc["findings"], err)


def test_every_way_a_notebook_compiles_is_seen_and_its_cells_run_once(tmp_path: Path) -> None:
    """``model.compile()`` and ``torch.compile`` under another name are the notebook's own
    compiles too; a guessed model is still analysed beside them; and the cells run once, in the
    worker, where the notebook also declares a compile_example."""
    path = _write(
        tmp_path,
        "ways.ipynb",
        ("code", "import torch\nfrom torch import nn\nfrom torch import compile as tc"),
        ("code", 'with open("runs.log", "a") as log:\n    log.write("ran\\n")'),
        ("code", CHATTY),
        ("code", 'm = Chatty()\nm.compile(backend="eager")\nm(torch.randn(4, 8))'),
        ("code", SCALE.replace("torch.compile(", "tc(")),
        ("code", GATE),
    )
    truth = _torchs(path)
    assert ("graph_break", 3, 4) in truth and ("recompile", 5, 2) in truth, truth
    (tmp_path / "runs.log").unlink()  # the ground truth's own run
    _, doc, err = check_json(path.name, "--checks", "breaks,recompiles", cwd=tmp_path)
    ours = {(f["kind"], f["cell"], f["line"]) for f in doc["findings"]}
    # torch's, from the notebook's own calls, and compile_example's Gate break (cell 6, line 3).
    assert ours == truth | {("graph_break", 6, 3)}, (doc["findings"], err)
    assert (tmp_path / "runs.log").read_text() == "ran\n"
