"""``%load_ext dynamo_lens``: from that moment, every compile a cell causes is captured (one
structured-trace log per cell, capture.py), read into findings named by the cell's execution
count (cellfindings.py), and summed up under the cell that caused it (summary.py).

``%dynamo_lens`` shows every finding so far, ``%dynamo_lens --json FILE`` writes them as
``check``'s JSON, ``%unload_ext dynamo_lens`` stops the capture. Whatever goes wrong in here is
said in one line and never breaks the user's cell."""

from __future__ import annotations

import atexit
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..findings import FileResult
from ..notebooks.kernelfile import kernel_findings
from ..report.jsonout import document
from . import summary
from .capture import CellLogs, strings
from .cellfindings import CellRun, read_cell

_LOADED: dict[int, Capture] = {}  # by id(shell): one capture per shell
# The names IPython's cell magics compile their body under (%%time, %%timeit).
_MAGIC_BODIES = ("<timed exec>", "<timed eval>", "<magic-timeit>")


class Capture:
    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.folder = Path(tempfile.mkdtemp(prefix="dynamo-lens-kernel-"))
        # A kernel that ends without %unload_ext takes its logs' folder with it all the same.
        atexit.register(shutil.rmtree, self.folder, True)
        self.logs = CellLogs(self.folder)
        self.root = Path.cwd()
        self.runs: list[CellRun] = []
        self.started = time.strftime("%H:%M")
        self._n = 0
        # A cell magic may run a cell inside the cell (%%capture): one log for the outer one.
        self._depth = 0
        self._known: set[str] = set()  # cell file names before the running cell began
        self._raw = ""

    def where(self) -> str:
        """The notebook, where the front end says which (VS Code, Jupyter Server 2), else a
        name that says these are the kernel's cells."""
        named = self.shell.user_ns.get("__vsc_ipynb_file__") or os.environ.get("JPY_SESSION_NAME")
        return str(named) if named else "<kernel>"

    def pre_run_cell(self, info: Any = None) -> None:
        self._depth += 1
        if self._depth > 1:
            return
        try:
            self._n += 1
            self._known = set(getattr(self.shell.compile, "_filename_map", {}))
            self._raw = str(getattr(info, "raw_cell", "") or "")
            self.logs.start(f"cell-{self._n}")
        except Exception as exc:  # never the user's cell's problem
            _say(f"capture not started for this cell: {exc}")

    def post_run_cell(self, result: Any = None) -> None:
        self._depth = max(self._depth - 1, 0)
        if self._depth:
            return
        try:
            self._after(getattr(result, "execution_count", None))
        except Exception as exc:
            _say(f"this cell's compiles could not be read: {exc}")

    def _cells(self, count: int | None) -> dict[str, tuple[int, int]]:
        """Each cell's file name -> (its In [n], its first line's line in the cell). A cell
        magic's body is compiled under a name of its own (``<timed exec>``, or a nested cell's
        for %%capture): it is this cell's, one line below the magic."""
        named = dict(getattr(self.shell.compile, "_filename_map", {}))
        out = {name: (int(n), 0) for name, n in named.items()}
        if count is None:
            return out
        lines = self._raw.split("\n")
        lead = next((i for i, ln in enumerate(lines) if ln.strip()), 0)
        if lines and lines[lead].lstrip().startswith("%%"):
            # The body's code, whatever name it ran under, starts below the magic's line (the
            # cell's own code holds only the magic's call).
            body = (count, lead + 1)
            out.update({name: body for name in named if name not in self._known})
            out.update({name: body for name in _MAGIC_BODIES})
        return out

    def _after(self, count: int | None) -> None:
        path = self.logs.stop()
        if path is None or not path.exists():
            return  # nothing compiled: the log was never opened
        try:
            run = read_cell(path, self._cells(count), self.root, self.where(), strings())
        finally:
            path.unlink(missing_ok=True)
        if not run.frames_compiled and not run.findings:
            return  # nothing compiled: no output under the cell
        self.runs.append(run)
        label = f"In [{count}]" if count is not None else "this cell"
        _show(summary.text(label, [run]), summary.table(label, [run]))
        self.leave_for_editor()

    def leave_for_editor(self) -> None:
        """The findings so far, where the editor's daemon looks for this notebook's (when the
        front end says which notebook this kernel runs)."""
        where = self.where()
        if where == "<kernel>":
            return
        target = kernel_findings(where)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.document()), encoding="utf-8")
        os.replace(tmp, target)

    def close(self) -> None:
        self.logs.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def document(self) -> dict[str, Any]:
        import torch

        result = FileResult(
            self.where(),
            "",
            reports=[rep for r in self.runs for rep in r.reports],
            findings=[f for r in self.runs for f in r.findings],
            ran=True,
        )
        env = {"kernel": f"captured from {self.started}", "torch": torch.__version__}
        return document([result], env)


def _say(message: str) -> None:
    print(f"dynamo-lens: {message}", file=sys.stderr)


def _show(plain: str, rich: str) -> None:
    from IPython.display import display

    display({"text/plain": plain, "text/html": rich}, raw=True)


def load(shell: Any) -> None:
    if id(shell) in _LOADED:
        _say("already loaded; %dynamo_lens shows the findings so far")
        return
    capture = Capture(shell)
    _LOADED[id(shell)] = capture
    shell.events.register("pre_run_cell", capture.pre_run_cell)
    shell.events.register("post_run_cell", capture.post_run_cell)
    shell.register_magic_function(_magic(capture), magic_kind="line", magic_name="dynamo_lens")
    # The cell that loads us is running now: capture the rest of it too.
    capture.pre_run_cell()
    _say("capturing torch.compile from now on: a summary follows each cell that compiles")


def unload(shell: Any) -> None:
    capture = _LOADED.pop(id(shell), None)
    if capture is None:
        return
    for name, fn in (
        ("pre_run_cell", capture.pre_run_cell),
        ("post_run_cell", capture.post_run_cell),
    ):
        try:
            shell.events.unregister(name, fn)
        except ValueError:
            pass
    shell.magics_manager.magics["line"].pop("dynamo_lens", None)
    capture.close()
    _say("capture stopped")


def _magic(capture: Capture) -> Any:
    def dynamo_lens(line: str) -> None:
        """%dynamo_lens: every finding so far. %dynamo_lens --json FILE: write them as
        `dynamo-lens check`'s JSON."""
        args = shlex.split(line)
        if not args:
            label = f"the kernel since {capture.started}"
            _show(summary.text(label, capture.runs), summary.table(label, capture.runs))
            return
        if len(args) == 2 and args[0] == "--json":
            target = Path(args[1]).expanduser()
            try:
                target.write_text(json.dumps(capture.document(), indent=2), encoding="utf-8")
            except OSError as exc:
                _say(f"cannot write {target}: {exc}")
                return
            n = sum(len(r.findings) for r in capture.runs)
            _say(f"wrote {target}: {n} finding(s)")
            return
        _say("usage: %dynamo_lens  |  %dynamo_lens --json FILE")

    return dynamo_lens
