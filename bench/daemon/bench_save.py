"""Save → fresh diagnostics through a real LSP client, against torch's own floor; and a cold
daemon's open → first confirmed diagnostic against `import torch` + explain.

    .venv/bin/python bench/daemon/bench_save.py [--rounds 6] [--out bench/daemon/RESULTS.md]

Part 1, per round and file (order rotated): append a new module-level statement to the file (a
new content hash, and an edit that reaches every target: nothing is reused) and send
``didChange`` + ``didSave`` at once, as an editor does; time until the ``publishDiagnostics``
that follows the daemon's analysis of that version (it logs "<path>: breaks in X s" just before
publishing). Then time the floor on the same bytes (a warm process: fresh import, the file's
``compile_example*``, ``torch._dynamo.explain``; bench/common.py).

Part 2, per repeat: a fresh daemon, ``initialize``/``initialized``, ``didOpen`` of one file at
once; time from starting the daemon to its first diagnostic that came from running the code,
against a fresh ``python -c`` that imports torch and runs the floor on the same file.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent.parent))
from bench.common import FLOOR_SRC, Floor, fmt_ms, machine, q_ratio, ratio_cell  # noqa: E402

FILES = [
    "models/clean_mlp.py",
    "models/cnn.py",
    "models/losses.py",
    "models/moe_router.py",
    "models/rotary_cache.py",
    "models/transformer_block.py",
    "models/zero_config.py",
]
SETTINGS = {"checks": ["breaks"], "checksOnSave": ["breaks"], "backend": "eager"}


class Daemon:
    def __init__(self) -> None:
        self.client = LanguageClient("bench", "1")
        self.logs: list[tuple[float, str]] = []
        self.published: list[tuple[float, str, int]] = []  # (time, uri, diagnostics)
        # Woken by each message: waiting costs no CPU (a polling loop would slow the daemon).
        self.arrived = asyncio.Event()

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def _log(params: types.LogMessageParams) -> None:
            self.logs.append((time.perf_counter(), params.message))
            self.arrived.set()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _pub(params: types.PublishDiagnosticsParams) -> None:
            self.published.append((time.perf_counter(), params.uri, len(params.diagnostics)))
            self.arrived.set()

    async def start(self, ws: Path) -> float:
        t0 = time.perf_counter()
        await self.client.start_io(sys.executable, "-m", "dynamo_lens", "serve")
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                root_uri=ws.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=ws.as_uri(), name="ws")],
                initialization_options={"trusted": True, "settings": SETTINGS},
            )
        )
        self.client.initialized(types.InitializedParams())
        return t0

    async def analysed(self, path: Path, after: float, timeout: float = 120) -> float:
        """When the publish after the daemon's log of an analysis of ``path`` arrived."""
        end = time.perf_counter() + timeout
        uri = path.as_uri()
        while True:
            logged = [t for t, m in self.logs if t > after and f"{path}: breaks in" in m]
            if logged:
                pubs = [t for t, u, _ in self.published if u == uri and t >= logged[0]]
                if pubs:
                    return pubs[0]
            self.arrived.clear()
            left = end - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"no analysis of {path}")
            try:
                await asyncio.wait_for(self.arrived.wait(), left)
            except TimeoutError:
                pass

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def _doc(path: Path, version: int) -> types.VersionedTextDocumentIdentifier:
    return types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version)


async def part1(ws: Path, rounds: int) -> dict[str, dict[str, list[float]]]:
    floor = Floor(ws)
    daemon = Daemon()
    await daemon.start(ws)
    out: dict[str, dict[str, list[float]]] = {f: {"floor": [], "save": []} for f in FILES}
    for rel in FILES:  # open everything once and let the first analyses finish (warm-up)
        path = (ws / rel).resolve()
        t = time.perf_counter()
        daemon.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=path.as_uri(), language_id="python", version=1, text=path.read_text()
                )
            )
        )
        await daemon.analysed(path, t, timeout=300)
        floor.run(ws, path)
    version = 1
    for r in range(rounds):
        order = FILES[r % len(FILES) :] + FILES[: r % len(FILES)]
        for rel in order:
            path = (ws / rel).resolve()
            version += 1
            # A module-level statement: every target of the file may read it, so none of their
            # results can be reused (an edit only some targets reach: bench_incremental.py).
            text = path.read_text() + f"_bench_edit = {version}\n"
            # As an editor does: write the file, then didChange + didSave at once.
            path.write_text(text)
            t0 = time.perf_counter()
            daemon.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=_doc(path, version),
                    content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
                )
            )
            daemon.client.text_document_did_save(
                types.DidSaveTextDocumentParams(
                    text_document=types.TextDocumentIdentifier(uri=path.as_uri())
                )
            )
            out[rel]["save"].append(await daemon.analysed(path, t0) - t0)
            out[rel]["floor"].append(floor.run(ws, path)["total"])
            await asyncio.sleep(1.0)  # the file watcher's look at the write settles
    await daemon.stop()
    floor.close()
    return out


COLD_FLOOR = FLOOR_SRC + "\nimport sys\nrun_file(sys.argv[1], sys.argv[2])\n"


async def part2(ws: Path, repeats: int, rel: str) -> dict[str, list[float]]:
    path = (ws / rel).resolve()
    out: dict[str, list[float]] = {"daemon": [], "floor": []}
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", COLD_FLOOR, str(ws), str(path)],
            cwd=ws,
            check=True,
            capture_output=True,
        )
        out["floor"].append(time.perf_counter() - t0)
        # No cache hit: the daemon's result cache (outside the workspace) starts empty.
        os.environ["XDG_CACHE_HOME"] = str(ws.parent / f"cache-{time.monotonic_ns()}")
        daemon = Daemon()
        t0 = await daemon.start(ws)
        daemon.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=path.as_uri(), language_id="python", version=1, text=path.read_text()
                )
            )
        )
        out["daemon"].append(await daemon.analysed(path, t0, timeout=300) - t0)
        await daemon.stop()
    return out


def report(
    p1: dict[str, dict[str, list[float]]],
    p2: dict[str, list[float]],
    args: argparse.Namespace,
    wall: float,
) -> str:
    import torch

    rows = []
    floor_tot = [sum(p1[f]["floor"][i] for f in FILES) for i in range(args.rounds)]
    save_tot = [sum(p1[f]["save"][i] for f in FILES) for i in range(args.rounds)]
    for f in FILES:
        rows.append(
            f"| {f} | {fmt_ms(p1[f]['floor'])} | {fmt_ms(p1[f]['save'])} | "
            f"{ratio_cell(p1[f]['save'], p1[f]['floor'])} |"
        )
    rows.append(
        f"| **total (7 saves)** | {fmt_ms(floor_tot)} | {fmt_ms(save_tot)} | "
        f"**{ratio_cell(save_tot, floor_tot)}** |"
    )
    cold = ratio_cell(p2["daemon"], p2["floor"])
    met = q_ratio(save_tot, floor_tot)[1] <= 1.2
    return f"""# Daemon over LSP: save → diagnostics, cold open → first finding

Generated by `{" ".join(["bench/daemon/bench_save.py", *sys.argv[1:]])}` on
{datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}; {wall:.0f} s.
Machine: {platform.platform()}, {machine()} (shared, noisy). Python {platform.python_version()},
torch {torch.__version__}. Settings: {SETTINGS}. Method: the docstring of `bench_save.py`.
Cells: median (IQR) over {args.rounds} rounds; ratios: median [IQR] of the per-round ratios, each
daemon save timed right after the floor on the same bytes.

## 1. Save → publishDiagnostics, warm daemon (`breaks`), against the floor

| file | floor ms | save → diagnostics ms | save / floor |
|---|---|---|---|
{chr(10).join(rows)}

Goal ≤ 1.2× (total): **{"met" if met else "not met"}**.

## 2. Cold daemon: start → first confirmed diagnostic on open, against `import torch` + explain

`{args.cold_file}`, {args.repeats} repeats, fresh processes each time, no Dynamo Lens cache.

| | ms |
|---|---|
| fresh `python`: import torch + the floor on the file | {fmt_ms(p2["floor"])} |
| fresh daemon: spawn → `didOpen` → first diagnostic from the run | {fmt_ms(p2["daemon"])} |
| ratio | {cold} |

Goal within 10 % (≤ 1.10×).
"""


async def main_async(args: argparse.Namespace) -> str:
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="dl-bench-save-"))
    try:
        ws = tmp / "ws"
        shutil.copytree(REPO / "example_workspace", ws)
        p1 = await part1(ws, args.rounds)
        p2 = await part2(ws, args.repeats, args.cold_file)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return report(p1, p2, args, time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cold-file", default="models/cnn.py")
    ap.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = ap.parse_args()
    text = asyncio.run(main_async(args))
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
