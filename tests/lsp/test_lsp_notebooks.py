"""Notebooks in the daemon over LSP 3.17 notebook sync (a real pytest-lsp client): static hints
land on a cell as it is typed, the check's findings land on their cells on save in a trusted
workspace (the cells' own torch.compile calls, read from torch's trace), and Restricted Mode
shows hints only and runs nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import scratch
from lsp_helpers import client_fixtures, logs, until
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "dynamo_lens", "serve"])
SETTINGS = {"checks": ["breaks", "recompiles"], "checksOnSave": ["breaks"], "backend": "eager"}

CELLS = [
    ("markdown", "# A model"),
    ("code", "%precision 3\nimport torch\nfrom torch import nn"),
    (
        "code",
        "class Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        top = x.abs().max().item()\n"
        "        return x / top",
    ),
    ("code", 'model = torch.compile(Net(), backend="eager")\nout = model(torch.randn(4, 8))'),
    (
        "code",
        "class Gate(nn.Module):\n"
        "    def forward(self, x):\n"
        "        if x.sum() > 0:\n"
        "            return x * 2\n"
        "        return x - 1\n"
        "\n"
        "\n"
        'gate = torch.compile(Gate(), backend="eager")\n'
        "y = gate(torch.randn(4))",
    ),
]


def _workspace() -> Path:
    ws = scratch("dl-lsp-nb-") / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text('[tool.dynamo-lens]\nbackend = "eager"\n')
    nb = nbformat.v4.new_notebook()
    make = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell}
    nb.cells = [make[kind](src) for kind, src in CELLS]
    nbformat.write(nb, ws / "explore.ipynb")
    return ws


def open_notebook(
    client: LanguageClient, path: Path, ran: dict[int, int] | None = None
) -> dict[int, str]:
    """didOpen of the notebook as VS Code sends it: its Python cells only (vscode-languageclient
    filters the cells by the server's selector, so markdown cells never reach the daemon), each
    with its execution summary where ``ran`` has one (the notebook's cell position -> the In [n]
    it last ran as). The URIs of the cells sent, by their position in the notebook."""
    ran = ran or {}
    nb_uri = path.resolve().as_uri()
    code = [(i, src) for i, (kind, src) in enumerate(CELLS, start=1) if kind == "code"]
    uris = {i: f"vscode-notebook-cell:{path.resolve()}#C{i}" for i, _ in code}
    summary = {i: types.ExecutionSummary(execution_order=ran[i], success=True) for i in ran}
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=nb_uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[
                    types.NotebookCell(
                        kind=types.NotebookCellKind.Code,
                        document=uris[i],
                        execution_summary=summary.get(i),
                    )
                    for i, _ in code
                ],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=uris[i], language_id="python", version=1, text=src)
                for i, src in code
            ],
        )
    )
    return uris


def _on(client: LanguageClient, u: str) -> list[tuple[int, str]]:
    return [(d.range.start.line + 1, d.message) for d in client.diagnostics.get(u, [])]


client, untrusted = client_fixtures(SERVER, _workspace, SETTINGS)


@pytest.mark.asyncio
async def test_a_hint_lands_on_its_cell_as_typed_and_the_run_confirms_it_on_save(
    client: LanguageClient,
) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "explore.ipynb"
    cells = open_notebook(client, path)
    # The hint, from the cells' text alone, on cell 3's third line.
    await until(lambda: any(ln == 3 for ln, _ in _on(client, cells[3])), 60, client)
    assert _on(client, cells[2]) == [] and _on(client, cells[4]) == []
    client.notebook_document_did_save(
        types.DidSaveNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=path.resolve().as_uri())
        )
    )
    # torch's own break, from the notebook's run, on the same cell and line.
    await until(
        lambda: any(ln == 3 and m.startswith("Graph break") for ln, m in _on(client, cells[3])),
        300,
        client,
    )
    assert any("explore.ipynb: checked" in m for m in logs(client))
    (diag,) = [d for d in client.diagnostics[cells[3]] if d.range.start.line == 2]
    assert diag.severity == types.DiagnosticSeverity.Warning and "[GB0124]" not in diag.message
    # The compiled forward is a target of its cell: a code lens and a hover summary there.
    cell = types.TextDocumentIdentifier(uri=cells[3])
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=cell))
    assert [(ln.range.start.line, ln.command.title if ln.command else "") for ln in lenses] == [
        (1, "1 graph break · 0 recompile risks")
    ], lenses
    shown = await client.text_document_hover_async(
        types.HoverParams(text_document=cell, position=types.Position(line=1, character=8))
    )
    assert shown is not None and isinstance(shown.contents, types.MarkupContent)
    assert "`forward` in the notebook's run" in shown.contents.value, shown.contents.value
    # A rewrite for the data-dependent branch, as an edit of its cell, labelled not verified.
    await until(lambda: any(ln == 3 for ln, _ in _on(client, cells[5])), 60, client)
    (branch,) = [d for d in client.diagnostics[cells[5]] if d.range.start.line == 2]
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=cells[5]),
            range=branch.range,
            context=types.CodeActionContext(diagnostics=[branch]),
        )
    )
    edits = [
        (a.title, a.edit)
        for a in actions or []
        if isinstance(a, types.CodeAction) and "not verified" in a.title
    ]
    assert edits, actions
    _, edit = edits[0]
    assert edit is not None and not (edit.changes or {}).get(path.resolve().as_uri()), edit
    (change,) = edit.document_changes or []
    assert isinstance(change, types.TextDocumentEdit) and change.text_document.uri == cells[5]
    (text_edit,) = change.edits
    assert text_edit.range.start.line == 2 and "torch.where" in text_edit.new_text, text_edit


@pytest.mark.asyncio
async def test_restricted_mode_shows_hints_on_cells_and_runs_nothing(
    untrusted: LanguageClient,
) -> None:
    ws: Path = untrusted.ws  # type: ignore[attr-defined]
    path = ws / "explore.ipynb"
    cells = open_notebook(untrusted, path)
    await until(lambda: any(ln == 3 for ln, _ in _on(untrusted, cells[3])), 60, untrusted)
    (hint,) = [m for ln, m in _on(untrusted, cells[3]) if ln == 3]
    assert "trusted workspace" in hint, hint
    untrusted.notebook_document_did_save(
        types.DidSaveNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=path.resolve().as_uri())
        )
    )
    await until(lambda: any("not run (Restricted Mode" in m for m in logs(untrusted)), 30)
    # Closed: its cells' markers go with it.
    untrusted.notebook_document_did_close(
        types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=path.resolve().as_uri()),
            cell_text_documents=[types.TextDocumentIdentifier(uri=u) for u in cells.values()],
        )
    )
    await until(lambda: all(_on(untrusted, u) == [] for u in cells.values()), 30, untrusted)


# The notebook's cells run in a real IPython shell with the extension loaded, as a kernel runs
# them (the kernel is told its notebook as Jupyter Server tells it: JPY_SESSION_NAME).
KERNEL = """
import json, os, sys
os.environ["JPY_SESSION_NAME"] = sys.argv[1]
from IPython.testing.globalipapp import start_ipython
ip = start_ipython()
ran = {}
for index, source in json.loads(sys.argv[2]):
    if index == 0:
        ip.run_cell(source, store_history=True).raise_error()
        continue
    result = ip.run_cell(source, store_history=True)
    result.raise_error()
    ran[index] = result.execution_count
print(json.dumps(ran))
"""


@pytest.mark.asyncio
async def test_a_live_kernels_findings_land_on_the_cells_that_ran_them(
    client: LanguageClient,
) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "explore.ipynb"
    # The imports, then the extension loaded (a cell of no notebook), then the model's cells.
    cells = [(2, CELLS[1][1]), (0, "%load_ext dynamo_lens"), (3, CELLS[2][1]), (4, CELLS[3][1])]
    out = subprocess.run(
        [sys.executable, "-c", KERNEL, str(path), json.dumps(cells)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ws,
        timeout=600,
    )
    ran = {int(k): v for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}
    assert set(ran) == {2, 3, 4}, out.stdout
    uris = open_notebook(client, path, ran)
    want = f"seen in the live kernel, In [{ran[3]}]"
    await until(lambda: any(want in m for ln, m in _on(client, uris[3]) if ln == 3), 60, client)
    others = [u for i, u in uris.items() if i != 3]
    assert not any("live kernel" in m for u in others for _, m in _on(client, u))
