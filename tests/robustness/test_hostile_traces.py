"""Traces from anywhere, read by `dynamo-lens trace`: whatever a trace names or holds, the reader
ends, stays within bounds, reads no file it should not, and reports what it skipped.

Each reader runs in a process of its own with 2 GB of address space at most, so a reader that
would swallow /dev/zero fails its test instead of the machine; a reader that would block for
good (a FIFO, /dev/stdin) or freeze in a regex fails on the generous time bound of ``_trace``,
which only a hang reaches (the reader takes well under a second on every input here).
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dynamo_lens.runs.extract import ranks_text
from support import hostile, peakmem

_HANG = 120  # seconds: a reader still going after this is stuck, not slow
_MIB = 1 << 20


def _trace(
    ws: Path, *logs: Path, fmt: str = "json", stdin: int | None = subprocess.DEVNULL
) -> tuple[int, str, str, float]:
    """(exit status, stdout, stderr, peak RSS in MiB) of `dynamo-lens trace` on ``logs``."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    cmd = ["trace", *map(str, logs), "--workspace", str(ws), "--format", fmt]
    try:
        return peakmem.cli(cmd, ws, timeout=_HANG, stdin=stdin, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the reader hung: still running after {_HANG} s")


def _doc(out: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(out)
    return doc


def _breaks(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["kind"] == "graph_break"]


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return hostile.workspace(tmp_path)


def _log(tmp: Path, *lines: str, gz: bool = False) -> Path:
    return hostile.write(tmp / ("rank_0.log.gz" if gz else "rank_0.log"), lines, gz=gz)


# -- severe -------------------------------------------------------------------------------------
def test_a_break_at_line_ten_to_the_twelfth_is_no_finding(ws: Path, tmp_path: Path) -> None:
    train = str(ws / "train.py")
    log = _log(tmp_path, hostile.graph_break((train, 10**12), [(train, 10**12, "step")]))
    rc, out, _, _ = _trace(ws, log)
    assert rc == 0 and _breaks(_doc(out)) == []


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_frame_naming_a_device_is_not_read(ws: Path, tmp_path: Path, device: str) -> None:
    log = _log(tmp_path, hostile.one_break(ws, (device, 3, "lib")))
    rc, out, _, peak = _trace(ws, log)
    (f,) = _breaks(_doc(out))
    assert rc == 1 and f["stack"][-1]["path"] == device and f["stack"][-1]["code"] == ""
    assert peak < 400, peak


@pytest.mark.parametrize("where", ["workspace", "outside"])
def test_a_frame_naming_a_fifo_does_not_block(ws: Path, tmp_path: Path, where: str) -> None:
    fifo = (ws if where == "workspace" else tmp_path) / "pipe.py"
    os.mkfifo(fifo)
    log = _log(tmp_path, hostile.one_break(ws, (str(fifo), 2, "helper")))
    rc, out, _, _ = _trace(ws, log)
    assert rc == 1 and len(_breaks(_doc(out))) == 1


def test_a_frame_naming_dev_stdin_does_not_read_the_readers_input(ws: Path, tmp_path: Path) -> None:
    log = _log(tmp_path, hostile.one_break(ws, ("/dev/stdin", 1, "lib")))
    # The reader's stdin is a pipe held open that nobody writes to: reading it blocks for good.
    read_end, write_end = os.pipe()
    try:
        rc, out, _, _ = _trace(ws, log, stdin=read_end)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert rc == 1 and len(_breaks(_doc(out))) == 1


def test_a_frame_naming_a_huge_file_outside_the_workspace_is_not_read(
    ws: Path, tmp_path: Path
) -> None:
    big = tmp_path / "huge.py"
    with big.open("wb") as fh:
        fh.truncate(300 * _MIB)  # sparse: nothing on disk, 300 MB for any reader
    log = _log(tmp_path, hostile.one_break(ws, (str(big), 5, "lib")))
    rc, out, _, peak = _trace(ws, log)
    assert rc == 1 and _breaks(_doc(out))[0]["stack"][-1]["code"] == ""
    assert peak < 200, peak


def test_a_gzip_log_inflating_to_one_huge_line_is_read_in_bounded_memory(
    ws: Path, tmp_path: Path
) -> None:
    log = tmp_path / "rank_0.log.gz"
    with gzip.open(log, "wb", compresslevel=1) as fh:
        fh.write((hostile.one_break(ws) + "\n").encode())
        for _ in range(400):  # one line of 400 MB, in ~400 KB of gzip
            fh.write(b"x" * _MIB)
        fh.write(b"\n")
    rc, out, err, peak = _trace(ws, log)
    assert rc == 1 and len(_breaks(_doc(out))) == 1
    assert "skipped 1 unreadable trace line" in err
    assert peak < 300, peak


def test_a_frame_naming_a_huge_workspace_file_is_neither_read_nor_parsed(
    ws: Path, tmp_path: Path
) -> None:
    big = ws / "generated.py"
    big.write_text("x = 1\n" * 5_000_000)  # 30 MB of Python
    train = str(ws / "train.py")
    frames = [(train, hostile.BREAK_LINE, "step"), (str(big), 7, "<module>")]
    log = _log(tmp_path, hostile.graph_break((str(big), 7), frames))
    rc, out, _, peak = _trace(ws, log)
    (f,) = _breaks(_doc(out))
    assert rc == 1 and f["path"] == str(big) and f["line"] == 7
    assert peak < 300, peak


def test_a_site_line_made_to_backtrack_is_read_in_linear_time(ws: Path, tmp_path: Path) -> None:
    first = "Graph break" + " in user code at x" * 55_000
    log = _log(tmp_path, hostile.one_break(ws, first_line=first))
    rc, out, _, _ = _trace(ws, log)
    assert rc == 1 and len(_breaks(_doc(out))) == 1


def test_a_recompile_reason_made_to_backtrack_is_read_in_linear_time(
    ws: Path, tmp_path: Path
) -> None:
    train = str(ws / "train.py")
    reason = "a" + " " * 1_000_000 + "b"
    hint = "(HINT: " + ")" * 100_000
    lines = [
        hostile.metrics(0, 0, co_filename=train),
        hostile.metrics(0, 1, co_filename=train, recompile_reason=reason),
        hostile.metrics(
            0, 2, co_filename=train, recompile_reason=f"tensor '{'x' * 50_000}' {hint}"
        ),
    ]
    rc, out, _, _ = _trace(ws, _log(tmp_path, *lines))
    assert rc in (0, 1) and _doc(out)["findings"] is not None


# -- minor --------------------------------------------------------------------------------------
BAD_RECORDS = {
    "a string-table entry with a non-integer index": '{"str": ["x", "abc"]}',
    "a string-table entry that is no pair": '{"str": ["x"]}',
    "null": "null",
    "JSON nested 200k deep": '{"compilation_metrics": ' + '{"x": ' * 200_000 + "1" + "}" * 200_001,
    "a metrics record whose rank is a string": '{"compilation_metrics": {}, "rank": "zero"}',
    "a compile time of 10**400": '{"compilation_metrics": {"entire_frame_compile_time_s": 1'
    + "0" * 400
    + "}}",
    "Infinity": '{"compilation_metrics": {"co_firstlineno": Infinity}}',
}


@pytest.mark.parametrize("what", sorted(BAD_RECORDS))
def test_a_bad_record_is_skipped_and_counted_not_fatal(ws: Path, tmp_path: Path, what: str) -> None:
    bad = hostile.PREFIX + BAD_RECORDS[what]
    log = _log(tmp_path, bad, hostile.one_break(ws), hostile.one_break(ws, rank=1))
    rc, out, err, _ = _trace(ws, log)
    assert rc == 1, err
    assert len(_breaks(_doc(out))) == 1, err


@pytest.mark.parametrize("rank", ["1", 10**300, -1, 1.5, True])
def test_a_rank_no_job_has_is_read_as_none(ws: Path, tmp_path: Path, rank: Any) -> None:
    log = _log(tmp_path, hostile.one_break(ws, rank=rank), hostile.one_break(ws, rank=2))
    rc, out, _, _ = _trace(ws, log)
    (f,) = _breaks(_doc(out))
    assert rc == 1 and "rank 2 only" in f["note"]


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_damaged_gzip_log_gives_what_it_holds_and_the_other_logs(
    ws: Path, tmp_path: Path, damage: str
) -> None:
    folder = tmp_path / "trace"
    folder.mkdir()
    good = hostile.write(folder / "rank_0.log", [hostile.one_break(ws)])
    bad = hostile.write(folder / "rank_1.log.gz", [hostile.one_break(ws, rank=1)] * 200, gz=True)
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) // 2] if damage == "truncated" else data[:20] + b"\0" * 200)
    rc, out, err, _ = _trace(ws, folder)
    assert rc == 1 and good.exists() and len(_breaks(_doc(out))) == 1
    assert "skipped" in err


def test_a_log_linked_to_proc_self_mem_is_skipped(ws: Path, tmp_path: Path) -> None:
    folder = tmp_path / "trace"
    folder.mkdir()
    hostile.write(folder / "rank_0.log", [hostile.one_break(ws)])
    (folder / "rank_1.log").symlink_to("/proc/self/mem")
    rc, out, _, _ = _trace(ws, folder)
    assert rc == 1 and len(_breaks(_doc(out))) == 1
    # Named on its own, the link is read as the file it is: unreadable, skipped.
    rc, out, err, _ = _trace(ws, folder / "rank_1.log")
    assert rc == 0 and "skipped" in err


def test_a_log_with_a_file_name_that_is_not_utf8(ws: Path, tmp_path: Path) -> None:
    folder = tmp_path / os.fsdecode(b"trace_\xff\xfe")
    folder.mkdir()
    name = os.fsdecode(b"rank_0_\xff\xfe.log")
    hostile.write(folder / name, [hostile.one_break(ws)])
    rc, out, _, _ = _trace(ws, folder)
    assert rc == 1 and len(_breaks(_doc(out))) == 1
    rc, out, _, _ = _trace(ws, folder, fmt="text")
    assert rc == 1 and "GB0170" in out


def test_a_frame_naming_etc_passwd_puts_nothing_of_it_in_the_report(
    ws: Path, tmp_path: Path
) -> None:
    log = _log(tmp_path, hostile.one_break(ws, ("/etc/passwd", 1, "lib")))
    rc, out, _, _ = _trace(ws, log)
    assert rc == 1 and "root:" not in out and _breaks(_doc(out))[0]["stack"][-1]["code"] == ""


def test_a_huge_line_and_a_huge_string_table_stay_within_bounds(ws: Path, tmp_path: Path) -> None:
    log = tmp_path / "rank_0.log"
    with log.open("w") as fh:
        fh.write(hostile.one_break(ws) + "\n")
        fh.write(hostile.PREFIX + '{"chromium_event": "' + "y" * (200 * _MIB) + '"}\n')
        for i in range(1_000_000):  # a million interned names
            fh.write(f'{hostile.PREFIX}{{"str": ["/cluster/path/{i:07d}/model.py", {i}]}}\n')
    rc, out, _, peak = _trace(ws, log)
    assert rc == 1 and len(_breaks(_doc(out))) == 1
    assert peak < 400, peak


def test_two_hundred_thousand_ranks_read_as_a_short_line() -> None:
    text = ranks_text(set(range(0, 400_000, 2)))
    assert text.startswith("ranks 0, 2, 4") and "(200000 ranks)" in text and len(text) < 100
    assert ranks_text(set(range(0, 200_000))) == "ranks 0–199999"


# -- the CLI's run ------------------------------------------------------------------------------
def _run(ws: Path, *cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dynamo_lens", "run", "--workspace", str(ws), *cmd],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=_HANG,
    )


def test_run_passes_the_commands_own_double_dashes_through(ws: Path) -> None:
    (ws / "argv.py").write_text("import sys\nprint('ARGV', sys.argv[1:])\n")
    done = _run(ws, "--", sys.executable, "argv.py", "--", "--lr", "3")
    assert "ARGV ['--', '--lr', '3']" in done.stdout, done.stdout


@pytest.mark.parametrize("script", ["raise SystemExit(3)", "import os; os.kill(os.getpid(), 9)"])
def test_a_run_whose_command_fails_fails(ws: Path, script: str) -> None:
    (ws / "fails.py").write_text(script + "\n")
    done = _run(ws, "--format", "sarif", "--", sys.executable, "fails.py")
    assert done.returncode == 2, done.stderr
    assert "exited with code 3" in done.stderr or "killed by SIGKILL" in done.stderr
    assert json.loads(done.stdout)["version"] == "2.1.0"  # the report all the same


def test_an_internal_error_is_one_line_and_exit_2(ws: Path, tmp_path: Path) -> None:
    # A bug of ours, made on purpose: the trace reader breaks on its first record.
    boom = (
        "import sys\n"
        "import dynamo_lens.runs.extract as x\n"
        "def broken(self, records): raise RuntimeError('a bug')\n"
        "x.RunReader.feed = broken\n"
        "from dynamo_lens.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    log = _log(tmp_path, hostile.one_break(ws))
    done = subprocess.run(
        [sys.executable, "-c", boom, "trace", str(log), "--workspace", str(ws)],
        capture_output=True,
        text=True,
        timeout=_HANG,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "dynamo-lens: internal error: RuntimeError: a bug"
