"""The daemon leaves with its client: after shutdown+exit, or when the client process dies,
it is gone within about a second and no worker is left behind."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsp_helpers import daemon_workspace, open_doc
from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pytest_lsp import client_capabilities

SETTINGS = {"checks": ["breaks"], "checksOnSave": ["breaks"], "backend": "eager"}


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # Field 4 (after the parenthesised command, which may hold spaces) is the parent pid.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited; only its parent's wait is missing


async def _start(process_id: int | None) -> tuple[LanguageClient, asyncio.subprocess.Process]:
    ws = daemon_workspace()
    client = LanguageClient("lifecycle-test", "1")
    await client.start_io(sys.executable, "-m", "dynamo_lens", "serve")
    proc = client._server
    assert proc is not None
    await client.initialize_async(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            process_id=process_id,
            root_uri=ws.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=ws.as_uri(), name="ws")],
            initialization_options={"trusted": True, "settings": SETTINGS},
        )
    )
    client.initialized(types.InitializedParams())
    open_doc(client, ws, "healthy.py")
    return client, proc


async def _workers_of(pid: int, timeout: float = 60.0) -> list[int]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        kids = _children(pid)
        if kids:
            return kids
        await asyncio.sleep(0.1)
    raise AssertionError("the daemon started no worker")


async def _gone(pids: list[int], seconds: float = 60.0) -> float:
    """Waits for every process to end (the event); ``seconds`` only bounds a hang."""
    t0 = time.monotonic()
    while any(_alive(p) for p in pids):
        if time.monotonic() - t0 > seconds:
            alive = [p for p in pids if _alive(p)]
            for p in alive:
                os.kill(p, signal.SIGKILL)
            raise AssertionError(f"still running after {seconds} s: {alive}")
        await asyncio.sleep(0.02)
    return time.monotonic() - t0


@pytest.mark.asyncio
async def test_shutdown_and_exit_end_the_daemon_and_its_workers() -> None:
    client, proc = await _start(os.getpid())
    workers = await _workers_of(proc.pid)
    await client.shutdown_async(None)
    client.exit(None)
    took = await _gone([proc.pid, *workers])
    assert await proc.wait() == 0, f"exit code after shutdown+exit ({took:.2f} s)"
    await client.stop()


@pytest.mark.asyncio
async def test_exit_without_shutdown_exits_with_code_1() -> None:
    client, proc = await _start(None)
    workers = await _workers_of(proc.pid)
    client.exit(None)
    await _gone([proc.pid, *workers])
    assert await proc.wait() == 1  # as the LSP spec says
    await client.stop()


@pytest.mark.asyncio
async def test_the_daemon_exits_when_its_client_process_dies() -> None:
    editor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    client, proc = await _start(editor.pid)
    workers = await _workers_of(proc.pid)
    editor.kill()
    editor.wait()
    # Polled once a second, then the same clean-up as exit.
    await _gone([proc.pid, *workers])
    await client.stop()
