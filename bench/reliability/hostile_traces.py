"""The hostile-trace set: traces and logs from anywhere, loaded into one untrusted daemon (the
"Load Torch Trace…" command, allowed in Restricted Mode) while an editor keeps hovering.

For each input: whether its load was answered and the daemon still answers after it (handled
cleanly), the hover latencies during the load (one hover every 20 ms), and at the end the
daemon's peak RSS and how many restarts it needed (any input after which it no longer answers
counts one, and a fresh daemon takes over).

    .venv/bin/python bench/reliability/hostile_traces.py     (also run by bench_reliability.py)
"""

from __future__ import annotations

import gzip
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from tests.support import hostile  # noqa: E402
from tests.support.raw_lsp import RawClient  # noqa: E402

MIB = 1 << 20


@dataclass
class Outcome:
    name: str
    answered: bool
    alive: bool
    hovers: list[float] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return self.answered and self.alive


def _inputs(ws: Path, tmp: Path) -> list[tuple[str, Callable[[], list[Path]]]]:
    """(what, a function making the trace paths to load) for each hostile input."""
    train = str(ws / "train.py")

    def log(name: str, *lines: str, gz: bool = False) -> list[Path]:
        return [hostile.write(tmp / name, lines, gz=gz)]

    def folder(name: str, fill: Callable[[Path], object]) -> list[Path]:
        d = tmp / name
        d.mkdir()
        fill(d)
        return [d]

    def fifo(where: Path) -> list[Path]:
        os.mkfifo(where / "pipe.py")
        return log(
            f"fifo-{where.name}.log", hostile.one_break(ws, (str(where / "pipe.py"), 1, "f"))
        )

    def sparse(path: Path, size: int) -> Path:
        with path.open("wb") as fh:
            fh.truncate(size)
        return path

    def huge_gz_line() -> list[Path]:
        path = tmp / "huge-line.log.gz"
        with gzip.open(path, "wb", compresslevel=1) as fh:
            fh.write((hostile.one_break(ws) + "\n").encode())
            for _ in range(1024):
                fh.write(b"x" * MIB)
            fh.write(b"\n")
        return [path]

    def huge_workspace_file() -> list[Path]:
        big = ws / "generated.py"
        big.write_text("x = 1\n" * 9_000_000)  # 54 MB
        frames = [(train, hostile.BREAK_LINE, "step"), (str(big), 7, "<module>")]
        return log("huge-ws-file.log", hostile.graph_break((str(big), 7), frames))

    def strings() -> list[Path]:
        path = tmp / "strings.log"
        with path.open("w") as fh:
            fh.write(hostile.one_break(ws) + "\n")
            for i in range(2_000_000):
                fh.write(f'{hostile.PREFIX}{{"str": ["/c/{i:07d}/model.py", {i}]}}\n')
        return [path]

    def line_400mb() -> list[Path]:
        path = tmp / "line.log"
        with path.open("w") as fh:
            fh.write(hostile.one_break(ws) + "\n")
            fh.write(hostile.PREFIX + '{"chromium_event": "' + "y" * (400 * MIB) + '"}\n')
        return [path]

    def distinct_breaks() -> list[Path]:
        lines = [
            hostile.graph_break((train, i), [(train, i, "step")], frame_id=i)
            for i in range(1, 100_001)
        ]
        return log("distinct.log", *lines)

    def ranks() -> list[Path]:
        lines = [hostile.one_break(ws, rank=r) for r in range(0, 400_000, 2)]
        return log("ranks.log", *lines)

    def damaged(d: Path) -> None:
        for kind in ("truncated", "corrupt"):
            bad = hostile.write(d / f"{kind}.log.gz", [hostile.one_break(ws)] * 100, gz=True)
            data = bad.read_bytes()
            bad.write_bytes(data[: len(data) // 2] if kind == "truncated" else data[:20] + b"0")
        hostile.write(d / "good.log", [hostile.one_break(ws)])

    bad_records = [
        hostile.PREFIX + '{"str": ["x", "abc"]}',
        hostile.PREFIX + "null",
        hostile.PREFIX + '{"compilation_metrics": ' + '{"x": ' * 200_000 + "1" + "}" * 200_001,
        hostile.one_break(ws, rank="1"),
        hostile.one_break(ws, rank=10**300),
        hostile.one_break(ws, rank=2),
    ]
    reason = "a" + " " * 1_000_000 + "b"
    (tmp / "link").symlink_to(ws)
    return [
        (
            "a break at line 10^12",
            lambda: log(
                "line.log", hostile.graph_break((train, 10**12), [(train, 10**12, "step")])
            ),
        ),
        (
            "a frame naming /dev/zero",
            lambda: log("zero.log", hostile.one_break(ws, ("/dev/zero", 1, "f"))),
        ),
        ("a frame naming a FIFO in the workspace", lambda: fifo(ws)),
        ("a frame naming a FIFO outside", lambda: fifo(tmp)),
        (
            "a frame naming /dev/stdin (the daemon's LSP input)",
            lambda: log("stdin.log", hostile.one_break(ws, ("/dev/stdin", 1, "f"))),
        ),
        (
            "a frame naming a 235 MB file outside the workspace",
            lambda: log(
                "big-outside.log",
                hostile.one_break(ws, (str(sparse(tmp / "big.py", 235 * MIB)), 3, "f")),
            ),
        ),
        ("a .log.gz inflating to one 1 GB line", huge_gz_line),
        ("a frame naming a 54 MB workspace .py", huge_workspace_file),
        (
            "a site line made to backtrack (55,000 repeats)",
            lambda: log(
                "site.log",
                hostile.one_break(ws, first_line="Graph break" + " in user code at x" * 55_000),
            ),
        ),
        (
            "a recompile reason made to backtrack (1 MB of spaces)",
            lambda: log(
                "reason.log",
                hostile.metrics(0, 0, co_filename=train),
                hostile.metrics(0, 1, co_filename=train, recompile_reason=reason),
            ),
        ),
        (
            "bad records (string table, null, 200k-deep JSON, odd ranks)",
            lambda: log("bad.log", *bad_records),
        ),
        ("truncated and corrupt .log.gz beside a good log", lambda: folder("damaged", damaged)),
        (
            "a log linked to /proc/self/mem",
            lambda: folder("mem", lambda d: (d / "rank_0.log").symlink_to("/proc/self/mem")),
        ),
        (
            "a log whose name is not UTF-8",
            lambda: folder(
                os.fsdecode(b"name-\xff"),
                lambda d: hostile.write(d / os.fsdecode(b"r\xfe.log"), [hostile.one_break(ws)]),
            ),
        ),
        (
            "a frame naming /etc/passwd",
            lambda: log("passwd.log", hostile.one_break(ws, ("/etc/passwd", 1, "f"))),
        ),
        ("one 400 MB line", line_400mb),
        ("two million interned strings", strings),
        ("100,000 distinct breaks", distinct_breaks),
        ("200,000 ranks", ranks),
        (
            "paths through a symlink and /./",
            lambda: log(
                "paths.log",
                hostile.graph_break((f"{ws}/./train.py", 6), [(f"{ws}/./train.py", 6, "step")]),
                hostile.graph_break(
                    (str(tmp / "link" / "train.py"), 6), [(str(tmp / "link" / "train.py"), 6, "s")]
                ),
            ),
        ),
    ]


def _daemon(ws: Path) -> RawClient:
    client = RawClient(ws, limit_mb=4096)
    client.initialize(ws, trusted=False, settings={"checks": ["breaks"]})
    return client


def _load(client: RawClient, uri: str, paths: list[Path], outcome: Outcome) -> None:
    """Load ``paths``, hovering every 20 ms meanwhile (from this thread)."""
    ids = [client.start_command("loadTrace", str(p)) for p in paths]
    done = threading.Event()

    # One deadline for the whole set: loads wait their turn (one trace read at a time, in no
    # fixed order), so the last answered may come long after its request on a loaded machine.
    deadline = time.monotonic() + 900

    def wait() -> None:
        left = lambda: max(0.0, deadline - time.monotonic())  # noqa: E731
        outcome.answered = all(client.response(i, left()) is not None for i in ids)
        done.set()

    threading.Thread(target=wait, daemon=True).start()
    while not done.is_set():
        t0 = time.monotonic()
        if client.hover(uri, hostile.BREAK_LINE - 1, timeout=60) is None:
            break
        outcome.hovers.append(time.monotonic() - t0)
        time.sleep(0.02)
    done.wait(max(0.0, deadline - time.monotonic()))


def run() -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        ws = hostile.workspace(tmp)
        uri = (ws / "train.py").as_uri()
        outcomes: list[Outcome] = []
        restarts = 0
        client = _daemon(ws)
        client.open(ws / "train.py")
        peak = 0.0
        try:
            inputs = _inputs(ws, tmp)
            big = tmp / "big-trace.log"
            with big.open("w") as fh:  # 108 MB: 100k records of 1 KB
                for i in range(100_000):
                    fh.write(hostile.one_break(ws, frame_id=i) + "\n")
                    fh.write(hostile.record({"chromium_event": {}}, ["z" * 1000]) + "\n")
            inputs.append(("twenty concurrent loads of a 108 MB trace", lambda: [big] * 20))
            for name, make in inputs:
                outcome = Outcome(name, False, False)
                _load(client, uri, make(), outcome)
                outcome.alive = client.hover(uri, 0, timeout=60) is not None
                peak = max(peak, client.peak_rss_mib())
                outcomes.append(outcome)
                print(f"{name}: {'clean' if outcome.clean else 'NOT CLEAN'}", flush=True)
                if not outcome.alive:
                    restarts += 1
                    client.close()
                    client = _daemon(ws)
                    client.open(ws / "train.py")
            # A new daemon shows the last run again (100k breaks were loaded): hovers meanwhile.
            client.close()
            outcome = Outcome("the next start, with the stored run", True, False)
            client = _daemon(ws)
            t_end = time.monotonic() + 10
            while time.monotonic() < t_end:
                t0 = time.monotonic()
                if client.hover(uri, 0, timeout=60) is None:
                    break
                outcome.hovers.append(time.monotonic() - t0)
                time.sleep(0.02)
            outcome.alive = client.hover(uri, 0, timeout=60) is not None
            outcomes.append(outcome)
            peak = max(peak, client.peak_rss_mib())
        finally:
            client.close()
    hovers = [h for o in outcomes for h in o.hovers]
    return {
        "outcomes": outcomes,
        "restarts": restarts,
        "peak_rss_mib": peak,
        "hover_p50_ms": statistics.median(hovers) * 1e3,
        "hover_p95_ms": statistics.quantiles(hovers, n=20)[18] * 1e3,
        "hover_max_ms": max(hovers) * 1e3,
        "hovers": len(hovers),
    }


def markdown(res: dict[str, object]) -> list[str]:
    outcomes: list[Outcome] = res["outcomes"]  # type: ignore[assignment]
    clean = sum(o.clean for o in outcomes)
    rows = [
        "## Hostile traces",
        "",
        "`bench/reliability/hostile_traces.py`: each input loaded into one untrusted daemon "
        "(Restricted Mode, 4 GB of address space) while a hover is sent every 20 ms; the daemon "
        "is replaced only if it stops answering (a restart).",
        "",
        "| measure | result | goal |",
        "|---|---|---|",
        f"| inputs tried | {len(outcomes)} | |",
        f"| handled cleanly (answered, daemon still answering) | {clean}/{len(outcomes)} | all |",
        f"| daemon peak RSS over the whole set | {res['peak_rss_mib']:.0f} MiB | |",
        f"| hover latency during the loads, p50 | {res['hover_p50_ms']:.0f} ms | |",
        f"| hover latency during the loads, p95 | {res['hover_p95_ms']:.0f} ms | < 200 ms |",
        f"| hover latency during the loads, max | {res['hover_max_ms']:.0f} ms | |",
        f"| hovers sent | {res['hovers']} | |",
        f"| daemon restarts needed | {res['restarts']} | 0 |",
        "",
        "| input | handled | hovers during it | p95 |",
        "|---|---|---|---|",
    ]
    for o in outcomes:
        p95 = statistics.quantiles(o.hovers, n=20)[18] * 1e3 if len(o.hovers) >= 2 else 0.0
        hov = f"{len(o.hovers)}"
        rows.append(f"| {o.name} | {'yes' if o.clean else '**no**'} | {hov} | {p95:.0f} ms |")
    return rows


if __name__ == "__main__":
    print("\n".join(markdown(run())))
