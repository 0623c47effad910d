"""After an edit, only what the edit reaches runs again: save → fresh diagnostics through a real
LSP client, side by side with torch's floor (a warm process: fresh import, each
``compile_example*``, ``torch._dynamo.explain``; bench/common.py).

    .venv/bin/python bench/daemon/bench_incremental.py [--rounds 6] [--out FILE]

A generated workspace, per round (a new line each time: a new content hash, no cache hit):

1. ``four.py`` declares four targets (four small models); the edit is a line in one model's
   ``forward``. Compared with the floor of all four targets (the file).
2. ``helpers.py`` holds one function per model of ``m1.py`` … ``m5.py``; the edit is in the
   function only ``m1``'s target calls. The daemon re-checks the five importers; the time runs
   until all five are published. Compared with the floor of the five files.
3. ``four.py`` again, the edit in the function every target calls: no reuse is possible.
   Compared with the floor of the file (no regression).

A cold daemon's open → first confirmed diagnostic against ``import torch`` + explain is
bench_save.py's part 2 (RESULTS.md), measured in the same session.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
from bench_save import SETTINGS, Daemon  # noqa: E402
from common import Floor, fmt_ms, machine, q_ratio, ratio_cell  # noqa: E402

MODEL = """
class Model{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 32)
        self.out = nn.Linear(32, 8)

    def forward(self, x):
        h = shared(self.fc(x))
        if h.sum() > 0:  # data-dependent: a break
            h = h * 2
        for _ in range({i} + 1):
            h = torch.relu(self.fc(h))
        return self.out(h)


def compile_example_{i}():
    torch.manual_seed({i})
    return Model{i}(), (torch.randn(4, 32),)
"""

FOUR = "import torch\nfrom torch import nn\n\n\ndef shared(x):\n    return x + 1\n" + "".join(
    MODEL.format(i=i) for i in range(1, 5)
)

HELPER = "\n\ndef h{i}(x):\n    return torch.tanh(x) * {i}\n"
HELPERS = "import torch\n" + "".join(HELPER.format(i=i) for i in range(1, 6))

USER = """import torch
from torch import nn

from helpers import h{i}


class M{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 32)

    def forward(self, x):
        h = h{i}(self.fc(x))
        if h.mean() > 0:  # data-dependent: a break
            h = h - 1
        return self.fc(h)


def compile_example():
    torch.manual_seed({i})
    return M{i}(), (torch.randn(4, 32),)
"""


def workspace(root: Path) -> Path:
    ws = root / "ws"
    ws.mkdir()
    (ws / "four.py").write_text(FOUR)
    (ws / "helpers.py").write_text(HELPERS)
    for i in range(1, 6):
        (ws / f"m{i}.py").write_text(USER.format(i=i))
    return ws


def insert_after(path: Path, anchor: str, line: str) -> str:
    """Adds ``line`` (indented like the line after ``anchor``) after ``anchor``'s line."""
    lines = path.read_text().splitlines(keepends=True)
    i = next(k for k, ln in enumerate(lines) if anchor in ln)
    indent = lines[i + 1][: len(lines[i + 1]) - len(lines[i + 1].lstrip())]
    lines.insert(i + 1, f"{indent}{line}\n")
    text = "".join(lines)
    path.write_text(text)
    return text


async def save(daemon: Daemon, path: Path, text: str, version: int) -> float:
    t0 = time.perf_counter()
    daemon.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    daemon.client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri())
        )
    )
    return t0


async def run(ws: Path, rounds: int) -> dict[str, dict[str, list[float]]]:
    floor = Floor(ws)
    daemon = Daemon()
    await daemon.start(ws)
    users = [ws / f"m{i}.py" for i in range(1, 6)]
    opened = [ws / "four.py", ws / "helpers.py", *users]
    for path in opened:  # open everything; the first analyses warm the worker and the memo
        t = time.perf_counter()
        daemon.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=path.as_uri(), language_id="python", version=1, text=path.read_text()
                )
            )
        )
        if path.name != "helpers.py":
            await daemon.analysed(path, t, timeout=300)
    out: dict[str, dict[str, list[float]]] = {
        c: {"save": [], "floor": []} for c in ("one", "helper", "all")
    }
    version = 1
    for _ in range(rounds):
        version += 1
        four = ws / "four.py"
        # 1. One of four targets.
        text = insert_after(four, "class Model2", f"edit_{version} = {version}")
        t0 = await save(daemon, four, text, version)
        out["one"]["save"].append(await daemon.analysed(four, t0) - t0)
        out["one"]["floor"].append(floor.run(ws, four)["total"])
        await asyncio.sleep(0.5)
        # 2. A helper that one of five importers reaches.
        helpers = ws / "helpers.py"
        text = insert_after(helpers, "def h1(", f"_edit = {version}")
        t0 = await save(daemon, helpers, text, version)
        done = [await daemon.analysed(u, t0) for u in users]
        out["helper"]["save"].append(max(done) - t0)
        out["helper"]["floor"].append(sum(floor.run(ws, u)["total"] for u in users))
        await asyncio.sleep(0.5)
        # 3. What every target reaches.
        version += 1
        text = insert_after(four, "def shared(", f"_edit = {version}")
        t0 = await save(daemon, four, text, version)
        out["all"]["save"].append(await daemon.analysed(four, t0) - t0)
        out["all"]["floor"].append(floor.run(ws, four)["total"])
        await asyncio.sleep(0.5)
    await daemon.stop()
    floor.close()
    return out


GOALS = {"one": 0.4, "helper": 0.3, "all": 1.1}
WHAT = {
    "one": "save after an edit that reaches 1 of 4 targets in a file | a bare explain of all 4",
    "helper": "an edit in a helper imported by 5 model files, reachable from one target | "
    "a bare explain of the 5 files",
    "all": "an edit that reaches every target | a bare explain of the file",
}


def report(out: dict[str, dict[str, list[float]]], args: argparse.Namespace, wall: float) -> str:
    import torch

    rows = []
    for case in ("one", "helper", "all"):
        s, f = out[case]["save"], out[case]["floor"]
        met = q_ratio(s, f)[1] <= GOALS[case]
        rows.append(
            f"| {WHAT[case]} | {fmt_ms(f)} | {fmt_ms(s)} | **{ratio_cell(s, f)}** | "
            f"≤ {GOALS[case]}× {'met' if met else 'NOT met'} |"
        )
    return f"""# Incremental re-analysis over LSP: only what an edit reaches

Generated by `{" ".join(["bench/daemon/bench_incremental.py", *sys.argv[1:]])}` on
{datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}; {wall:.0f} s.
Machine: {platform.platform()}, {machine()} (shared, noisy). Python {platform.python_version()},
torch {torch.__version__}. Settings: {SETTINGS}. Method: the docstring of
`bench_incremental.py`. Cells: median (IQR) over {args.rounds} rounds; ratios: median [IQR] of
the per-round ratios, each save timed right before the floor on the same bytes.

| case | compared with | floor ms | save → diagnostics ms | ratio | goal |
|---|---|---|---|---|---|
{chr(10).join(rows)}

Cold open → first confirmed diagnostic: `RESULTS.md` (bench_save.py), run the same day.
"""


async def main_async(args: argparse.Namespace) -> str:
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="dl-bench-incremental-"))
    try:
        ws = workspace(tmp)
        out = await run(ws, args.rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return report(out, args, time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--out", default=str(HERE / "INCREMENTAL.md"))
    args = ap.parse_args()
    text = asyncio.run(main_async(args))
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
