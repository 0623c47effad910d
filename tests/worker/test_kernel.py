"""``%load_ext dynamo_lens`` in a real Jupyter kernel, driven through nbclient: the capture
starts without a restart, each cell that compiles gets a summary (plain text and an HTML
table) naming its breaks and recompiles by execution count and line, a cell that raises and
an interrupt in the middle of a compile leave the capture working, ``%dynamo_lens --json``
writes check's JSON, and ``%unload_ext`` stops it all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_core.utils import run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from support.notebook_cells import CLEAN, SCALE

BREAK = """def chatty(x):
    y = torch.relu(x)
    print("in chatty")
    return y * 2


torch.compile(chatty, backend="eager")(torch.randn(4))"""
# Tracing a million-step Python loop keeps Dynamo busy for many minutes: the interrupt lands in
# the middle of the compile (the test waits for the cell to say it began, never for a time).
LONG = """def long(x):
    for _ in range(1_000_000):
        x = x + 1
    return x


print("compiling now", flush=True)
torch.compile(long, backend="eager")(torch.randn(2))"""


class Kernel:
    def __init__(self, folder: Path) -> None:
        self.nb = nbformat.v4.new_notebook()
        self.client = NotebookClient(
            self.nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": folder}}
        )

    def run(self, source: str, *, raises: bool = False) -> dict[str, Any]:
        cell = nbformat.v4.new_code_cell(source)
        self.nb.cells.append(cell)
        try:
            self.client.execute_cell(cell, len(self.nb.cells) - 1)
        except CellExecutionError:
            if not raises:
                raise
        else:
            assert not raises, cell.outputs
        return dict(cell)

    def interrupt_during(self, source: str) -> dict[str, Any]:
        """Run ``source``, interrupt the kernel once it prints that its compile began, and
        return the reply; iopub messages are read until the kernel is idle again."""
        kc = self.client.kc
        assert kc is not None and self.client.km is not None
        # nbclient's kernel client and manager are asynchronous: called as nbclient calls them.
        iopub, shell = run_sync(kc.get_iopub_msg), run_sync(kc.get_shell_msg)
        interrupt = run_sync(self.client.km.interrupt_kernel)
        msg_id = kc.execute(source)
        interrupted = False
        while True:
            msg = iopub(timeout=600)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            content = msg["content"]
            began = msg["msg_type"] == "stream" and "compiling now" in content.get("text", "")
            if began and not interrupted:
                interrupt()
                interrupted = True
            if msg["msg_type"] == "status" and content["execution_state"] == "idle":
                break
        reply = shell(timeout=600)
        assert interrupted
        return dict(reply["content"])


def _summary(cell: dict[str, Any]) -> tuple[str, str]:
    (shown,) = [o for o in cell["outputs"] if o["output_type"] == "display_data"]
    return shown["data"]["text/plain"], shown["data"]["text/html"]


def _stderr(cell: dict[str, Any]) -> str:
    return "".join(o.get("text", "") for o in cell["outputs"] if o.get("name") == "stderr")


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("kernel")
    k = Kernel(folder)
    with k.client.setup_kernel():
        k.folder = folder  # type: ignore[attr-defined]
        yield k


def test_a_live_kernel_captures_each_cells_compiles_from_load_to_unload(kernel: Kernel) -> None:
    kernel.run("import torch")
    before = kernel.run(CLEAN)  # compiled before the load: nothing captured, no summary
    assert not [o for o in before["outputs"] if o["output_type"] == "display_data"]
    loaded = kernel.run("%load_ext dynamo_lens")
    assert "capturing torch.compile from now on" in _stderr(loaded)

    brk = kernel.run(BREAK)
    text, table = _summary(brk)
    n = brk["execution_count"]
    assert f"dynamo-lens: In [{n}] compiled" in text and "1 graph break," in text, text
    assert f"In [{n}], line 3" in text and "[GB0059]" in text, text  # the print, in chatty
    assert "<table>" in table and f"In [{n}], line 3" in table

    rec = kernel.run(SCALE)
    text, _ = _summary(rec)
    m = rec["execution_count"]
    assert "1 recompile," in text and f"In [{m}], line 2" in text, text
    assert "2 recompiles" in text, text  # torch's count: k = 1, then k = 2

    clean = kernel.run(CLEAN.replace("smooth", "smoother"))
    text, _ = _summary(clean)
    assert "0 graph breaks, 0 recompiles, 0 fallbacks" in text, text

    # A cell magic's body runs under a name of its own (%%time's "<timed exec>", %%capture's
    # nested cell): its break is still this cell's, one line below the magic.
    for magic in ("%%time", "%%capture"):
        cell = kernel.run(f"{magic}\n" + BREAK.replace("chatty", magic.strip("%")))
        text, _ = _summary(cell)
        assert f"In [{cell['execution_count']}], line 4" in text, (magic, text)

    raised = kernel.run("raise ValueError('bad data')", raises=True)
    assert not [o for o in raised["outputs"] if o["output_type"] == "display_data"]

    reply = kernel.interrupt_during(LONG)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    after = kernel.run(BREAK.replace("chatty", "chattier"))  # the capture still works
    assert "1 graph break," in _summary(after)[0]

    out = Path(kernel.folder) / "found.json"  # type: ignore[attr-defined]
    kernel.run(f"%dynamo_lens --json {out}")
    doc = json.loads(out.read_text())
    places = {(f["kind"], f["execution_count"], f["line"]) for f in doc["findings"]}
    assert ("graph_break", n, 3) in places and ("recompile", m, 2) in places, places
    assert doc["environment"]["torch"]
    shown = kernel.run("%dynamo_lens")
    assert "4 graph breaks, 1 recompile" in _summary(shown)[0]

    unloaded = kernel.run("%unload_ext dynamo_lens")
    assert "capture stopped" in _stderr(unloaded)
    quiet = kernel.run(BREAK.replace("chatty", "quiet"))
    assert not [o for o in quiet["outputs"] if o["output_type"] == "display_data"]
