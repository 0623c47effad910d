"""Traces and runs in the editor's daemon: a trace loaded from anywhere (allowed in Restricted
Mode: parsing only), a command run from the editor, and the last run stored across restarts
never freeze, exhaust or crash the daemon, and never escape the workspace.

Every wait is for an event (an answer, a publish, a process gone); its bound only catches a
daemon that would never answer.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dynamo_lens.findings import FileResult, Finding, Kind, Severity
from dynamo_lens.runs.loaded import LoadedRun, SummaryRow
from dynamo_lens.server.cache import ResultCache, default_directory
from support import hostile
from support.raw_lsp import RawClient

SETTINGS = {"checks": ["breaks"], "checksOnSave": ["breaks"], "backend": "eager"}


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return hostile.workspace(tmp_path)


def _daemon(ws: Path, *, trusted: bool = False, **settings: Any) -> RawClient:
    # An untrusted daemon starts no worker: 2 GB of address space is plenty, and a daemon that
    # would swallow /dev/zero fails here instead of taking the machine down.
    client = RawClient(ws, limit_mb=None if trusted else 2048)
    reply = client.initialize(ws, trusted=trusted, settings={**SETTINGS, **settings})
    assert "result" in reply, reply
    return client


@pytest.fixture()
def untrusted(ws: Path) -> Iterator[RawClient]:
    client = _daemon(ws)
    yield client
    client.close()


def _train(ws: Path) -> str:
    return (ws / "train.py").as_uri()


def _log(tmp: Path, *lines: str, name: str = "rank_0.log") -> Path:
    return hostile.write(tmp / name, lines)


def _answers_hovers(client: RawClient, uri: str, n: int = 10) -> bool:
    return all(client.hover(uri, hostile.BREAK_LINE - 1, timeout=30) is not None for _ in range(n))


def _store(ws: Path, run: LoadedRun) -> None:
    """A run as an earlier daemon (or someone else) left it in the cache folder."""
    ResultCache(default_directory(ws), ws).put_run(run)


def _break_at(path: Path, line: int) -> FileResult:
    f = Finding(Kind.GRAPH_BREAK, Severity.WARNING, str(path), line, 1, line, 5, "Graph break")
    return FileResult(str(path), "", findings=[f], ran=True)


# -- severe -------------------------------------------------------------------------------------
def test_a_stored_run_at_line_ten_to_the_twelfth_never_stops_a_start(ws: Path) -> None:
    _store(ws, LoadedRun("trace forged.log", 0.0, results=[_break_at(ws / "train.py", 10**12)]))
    for _ in range(2):  # and the start after it
        client = _daemon(ws)
        try:
            assert client.wait(lambda c=client: c.notifications("dynamoLens/status"))
            assert client.command("environment") is not None
            assert client.wait(lambda c=client: c.diagnostics(_train(ws)) is not None)
        finally:
            client.close()


def test_a_trace_at_line_ten_to_the_twelfth_loads_and_a_restart_works(
    ws: Path, tmp_path: Path
) -> None:
    train = str(ws / "train.py")
    log = _log(tmp_path, hostile.graph_break((train, 10**12), [(train, 10**12, "step")]))
    client = _daemon(ws)
    try:
        reply = client.command("loadTrace", str(log))
        assert reply is not None and "result" in reply, reply
    finally:
        client.close()
    client = _daemon(ws)
    try:
        assert client.command("runSummary") is not None
    finally:
        client.close()


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/stdin"])
def test_a_frame_naming_a_device_is_not_read_by_the_daemon(
    untrusted: RawClient, ws: Path, tmp_path: Path, device: str
) -> None:
    log = _log(tmp_path, hostile.one_break(ws, (device, 3, "lib")))
    reply = untrusted.command("loadTrace", str(log))
    assert reply is not None and reply["result"]["findings"] == 1, reply
    # /dev/stdin is the daemon's own LSP input: reading it would swallow these.
    big = "x = 1\n" * 5000
    untrusted.open(ws / "train.py")
    untrusted.send(
        {
            "method": "textDocument/didChange",
            "params": {
                "textDocument": {"uri": _train(ws), "version": 2},
                "contentChanges": [{"text": hostile.SCRIPT + big}],
            },
        }
    )
    assert _answers_hovers(untrusted, _train(ws))
    assert untrusted.peak_rss_mib() < 400


def test_a_frame_naming_a_fifo_does_not_block_the_daemon(
    untrusted: RawClient, ws: Path, tmp_path: Path
) -> None:
    for where in (ws, tmp_path):
        os.mkfifo(where / "pipe.py")
    logs = [
        _log(tmp_path, hostile.one_break(ws, (str(w / "pipe.py"), 2, "f")), name=f"r{i}.log")
        for i, w in enumerate((ws, tmp_path))
    ]
    ids = [untrusted.start_command("loadTrace", str(log)) for log in logs * 4]
    assert all(untrusted.response(i, 60) is not None for i in ids)
    assert untrusted.request("shutdown", None) is not None


def test_a_big_file_a_trace_names_outside_the_workspace_is_not_held(
    untrusted: RawClient, ws: Path, tmp_path: Path
) -> None:
    big = tmp_path / "big.py"
    big.write_text("y = 2\n" * 20_000_000)  # 120 MB
    log = _log(tmp_path, hostile.one_break(ws, (str(big), 5, "lib")))
    assert untrusted.command("loadTrace", str(log)) is not None
    assert untrusted.command("clearRun") is not None
    assert untrusted.peak_rss_mib() < 250


def test_long_commands_never_starve_the_reader_of_the_lsp_stream(ws: Path, tmp_path: Path) -> None:
    (ws / "wait.py").write_text("import sys, time\nprint('started', flush=True)\ntime.sleep(600)\n")
    client = _daemon(ws, trusted=True)
    try:
        uri = client.open(ws / "train.py")
        tokens = [f"run-{i}" for i in range(8)]
        ids = [
            client.start_command("runFile", {"command": "python wait.py"}, token=t) for t in tokens
        ]
        started = lambda: sum("started" in str(m) for m in client.messages) >= 6  # noqa: E731
        assert client.wait(started, 120)
        # Every pool thread pygls has is taken by a run, and still a hover and a cancel come in.
        assert _answers_hovers(client, uri)
        client.send({"method": "window/workDoneProgress/cancel", "params": {"token": tokens[0]}})
        reply = client.response(ids[0], 60)
        assert reply is not None and reply["result"]["cancelled"] is True, reply
        for t in tokens[1:]:
            client.send({"method": "window/workDoneProgress/cancel", "params": {"token": t}})
        assert all(client.response(i, 60) is not None for i in ids[1:])
    finally:
        client.close()


def test_many_loads_of_a_big_trace_leave_hovers_answered(
    untrusted: RawClient, ws: Path, tmp_path: Path
) -> None:
    log = tmp_path / "big.log"
    with log.open("w") as fh:
        for i in range(20_000):  # 20k records of 1 KB: a 20 MB trace
            fh.write(hostile.one_break(ws, frame_id=i) + "\n")
            fh.write(hostile.record({"chromium_event": {}}, ["z" * 1000]) + "\n")
    uri = untrusted.open(ws / "train.py")
    ids = [untrusted.start_command("loadTrace", str(log)) for _ in range(10)]
    assert _answers_hovers(untrusted, uri)
    assert all(untrusted.response(i, 300) is not None for i in ids)


def test_a_stored_runs_file_replaced_by_a_fifo_never_freezes_a_start(
    ws: Path, tmp_path: Path
) -> None:
    log = _log(tmp_path, hostile.one_break(ws))
    client = _daemon(ws)
    try:
        assert client.command("loadTrace", str(log)) is not None
    finally:
        client.close()
    (ws / "train.py").unlink()
    os.mkfifo(ws / "train.py")
    client = _daemon(ws)
    try:
        assert client.command("environment") is not None
        assert client.hover(_train(ws), 5) is not None
    finally:
        client.close()


# -- minor --------------------------------------------------------------------------------------
def test_a_damaged_log_in_a_folder_leaves_the_others_loaded(
    untrusted: RawClient, ws: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "trace"
    folder.mkdir()
    hostile.write(folder / "rank_0.log", [hostile.one_break(ws)])
    bad = hostile.write(folder / "rank_1.log.gz", [hostile.one_break(ws, rank=1)] * 50, gz=True)
    bad.write_bytes(bad.read_bytes()[:40])
    hostile.write(folder / "rank_2.log", [hostile.PREFIX + '{"str": ["x", "abc"]}'])
    reply = untrusted.command("loadTrace", str(folder))
    assert reply is not None and reply["result"]["findings"] == 1 and reply["result"]["skipped"]


def test_many_distinct_breaks_are_capped_per_file_and_in_the_summary(
    ws: Path, tmp_path: Path
) -> None:
    train = str(ws / "train.py")
    lines = [
        hostile.graph_break((train, i), [(train, i, "step")], frame_id=i) for i in range(1, 3001)
    ]
    log = _log(tmp_path, *lines)
    client = _daemon(ws)
    try:
        assert client.command("loadTrace", str(log), timeout=300) is not None
        assert client.wait(lambda: client.diagnostics(_train(ws)))
        shown = client.diagnostics(_train(ws)) or []
        assert len(shown) == 201 and any("2800 more finding(s)" in d["message"] for d in shown)
        summary = (client.command("runSummary") or {})["result"]
        assert len(summary["rows"]) == 500 and summary["rowsNotShown"] == 2500
    finally:
        client.close()
    client = _daemon(ws)  # the next start republishes off the event loop
    try:
        assert client.hover(_train(ws), 5) is not None
        assert client.wait(lambda: len(client.diagnostics(_train(ws)) or []) == 201)
    finally:
        client.close()


@pytest.mark.parametrize("how", ["dot", "symlink"])
def test_trace_paths_that_reach_the_workspace_another_way_keep_their_findings(
    ws: Path, tmp_path: Path, how: str
) -> None:
    if how == "dot":
        train = f"{ws}/./train.py"
    else:
        (tmp_path / "link").symlink_to(ws)
        train = str(tmp_path / "link" / "train.py")
    log = _log(tmp_path, hostile.graph_break((train, 6), [(train, 6, "step")]))
    client = _daemon(ws)
    try:
        uri = client.open(ws / "train.py")
        assert client.command("loadTrace", str(log)) is not None
        assert client.wait(lambda: client.diagnostics(uri))
        edited = "# a comment\n" + hostile.SCRIPT
        client.send(
            {
                "method": "textDocument/didChange",
                "params": {
                    "textDocument": {"uri": uri, "version": 2},
                    "contentChanges": [{"text": edited}],
                },
            }
        )
        moved = lambda: [d["range"]["start"]["line"] for d in client.diagnostics(uri) or []]  # noqa: E731
        assert client.wait(lambda: moved() == [hostile.BREAK_LINE])  # line 7, 0-based 6
    finally:
        client.close()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_shutdown_during_a_run_stops_its_processes_and_removes_its_trace(ws: Path) -> None:
    (ws / "spawn.py").write_text(
        "import subprocess, sys, os, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "print('pids', os.getpid(), child.pid, os.environ['TORCH_TRACE'], flush=True)\n"
        "time.sleep(600)\n"
    )
    client = _daemon(ws, trusted=True)
    try:
        client.start_command("runFile", {"command": "python spawn.py"}, token="run")
        said = lambda: [m for m in client.messages if "pids" in str(m.get("params", ""))]  # noqa: E731
        assert client.wait(said, 120)
        _, pid, child, trace = said()[0]["params"]["message"].split()
        assert client.request("shutdown", None) is not None
        client.send({"method": "exit"})
        assert client.wait(lambda: not _alive(int(pid)) and not _alive(int(child)), 30)
        assert not Path(trace).exists()
    finally:
        client.close()


def test_a_settings_change_during_a_run_keeps_its_findings(ws: Path) -> None:
    (ws / "slow.py").write_text(
        hostile.SCRIPT
        + "import time\nprint('ready', flush=True)\n"
        + "while not __import__('os').path.exists('GO'):\n    time.sleep(0.05)\n"
        + "torch.compile(step, backend='eager')(torch.ones(4))\n"
    )
    client = _daemon(ws, trusted=True)
    try:
        rid = client.start_command("runFile", {"command": "python slow.py"}, token="run")
        assert client.wait(lambda: any("ready" in str(m) for m in client.messages), 120)
        change = {"settings": {"dynamoLens": {**SETTINGS, "timeout": 99}}}
        client.send({"method": "workspace/didChangeConfiguration", "params": change})
        restarted = lambda: any("restarting" in str(m) for m in client.messages)  # noqa: E731
        assert client.wait(restarted, 60)
        (ws / "GO").write_text("go")
        reply = client.response(rid, 300)
        assert reply is not None and reply["result"]["findings"] >= 1, reply
        summary = client.command("runSummary")
        assert summary is not None and summary["result"] is not None
        assert summary["result"]["rows"], summary
    finally:
        client.close()


@pytest.mark.parametrize(
    "command",
    [
        "bash -c 'sleep 61 & echo started'",
        "python -c \"import subprocess, sys; subprocess.Popen(['setsid', 'sleep', '61']); "
        "print('started')\"",
    ],
    ids=["background child", "setsid child"],
)
def test_a_run_is_over_when_its_command_is(ws: Path, command: str) -> None:
    client = _daemon(ws, trusted=True)
    try:
        reply = client.command("runFile", {"command": command}, timeout=60)
        assert reply is not None and reply["result"]["exitCode"] == 0, reply
        if command.startswith("bash"):  # what it left in its own process group is stopped
            left = subprocess.run(["pgrep", "-f", "^sleep 61$"], capture_output=True, text=True)
            pids = [int(p) for p in left.stdout.split()]
            assert client.wait(lambda: not any(_alive(p) for p in pids), 30)
    finally:
        client.close()
        subprocess.run(["pkill", "-f", "^sleep 61$"])


def test_the_file_in_a_run_command_is_quoted_for_a_shell(ws: Path) -> None:
    odd = ws / "a;touch PWNED_I;b.py"
    odd.write_text("print('ran')\n")
    client = _daemon(ws, trusted=True)
    try:
        reply = client.command(
            "runFile", {"uri": odd.as_uri(), "command": "bash -c 'python3 ${file}'"}
        )
        assert reply is not None and reply["result"]["exitCode"] == 0, reply
        assert not (ws / "PWNED_I").exists()
    finally:
        client.close()


def _restored(client: RawClient) -> bool:
    """The event that a new daemon is done with the stored run (shown, or refused)."""
    return client.wait(lambda: any("last run" in str(m) for m in client.messages))


def test_a_forged_stored_run_naming_a_file_outside_is_refused(ws: Path) -> None:
    row = SummaryRow("/etc/shadow", 1, "GB0170", "x", 1, 1, "", 0.0)
    _store(ws, LoadedRun("trace x", 0.0, results=[], summary=[row]))
    client = _daemon(ws)
    try:
        assert _restored(client)
        reply = client.command("runSummary")
        assert reply is not None and reply["result"] is None, reply
    finally:
        client.close()


def test_a_run_of_a_deleted_file_does_not_come_back(ws: Path, tmp_path: Path) -> None:
    log = _log(tmp_path, hostile.one_break(ws))
    client = _daemon(ws)
    try:
        assert client.command("loadTrace", str(log)) is not None
    finally:
        client.close()
    (ws / "train.py").unlink()
    client = _daemon(ws)
    try:
        assert _restored(client)
        summary = (client.command("runSummary") or {})["result"]
        assert client.diagnostics(_train(ws)) in (None, [])
        assert summary is not None and summary["rows"] == [], summary
    finally:
        client.close()


def test_load_trace_paths_are_the_workspaces(
    untrusted: RawClient, ws: Path, tmp_path: Path
) -> None:
    reply = untrusted.command("loadTrace", "")
    assert reply is not None and "error" in reply, reply
    _log(ws, hostile.one_break(ws), name="here.log")
    reply = untrusted.command("loadTrace", "here.log")  # relative: the workspace's
    assert reply is not None and reply["result"]["findings"] == 1, reply


def test_an_unbalanced_quote_in_the_run_command_is_a_clear_error(ws: Path) -> None:
    client = _daemon(ws, trusted=True)
    try:
        reply = client.command("runFile", {"command": "python 'train.py"})
        assert reply is not None and reply["error"]["code"] == -32602, reply  # InvalidParams
        assert "dynamoLens.runCommand cannot be read" in reply["error"]["message"]
    finally:
        client.close()


def test_a_command_that_swaps_its_trace_folder_for_a_link_gets_nothing_read(
    ws: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _log(elsewhere, hostile.one_break(ws))
    (ws / "swap.py").write_text(
        "import os, shutil\n"
        "t = os.environ['TORCH_TRACE']\n"
        "shutil.rmtree(t, ignore_errors=True)\n"
        f"os.symlink({str(elsewhere)!r}, t)\n"
    )
    client = _daemon(ws, trusted=True)
    try:
        reply = client.command("runFile", {"command": "python swap.py"})
        assert reply is not None and reply["result"]["findings"] == 0, reply
    finally:
        client.close()
