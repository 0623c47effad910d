"""The daemon's scheduler and service with a fake engine: no worker, no torch, milliseconds."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dynamo_lens.config import Config
from dynamo_lens.engine.cancel import CancelToken
from dynamo_lens.findings import FileResult, Finding, Kind, Severity, TargetReport
from dynamo_lens.server.scheduler import Job, Scheduler
from dynamo_lens.server.service import AnalysisService
from dynamo_lens.texts.source import content_hash


def _wait(pred: Callable[[], bool], timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.005)


def test_newest_request_wins_and_a_running_job_is_cancelled() -> None:
    ran: list[Job] = []
    started = threading.Event()
    release = threading.Event()

    def run(job: Job) -> None:
        ran.append(job)
        started.set()
        release.wait(5)

    s = Scheduler(run, debounce=0.0)
    first = s.submit("/w/a.py", 1, ["breaks"], "save", delay=0.0)
    assert started.wait(5)
    for v in range(2, 12):  # queued while the first runs: each replaces the last
        s.submit("/w/a.py", v, ["breaks"], "save", delay=0.0)
    assert first.token.cancelled
    release.set()
    _wait(lambda: s.count() == 0)
    assert [j.version for j in ran] == [1, 11]
    s.close()


class FakeEngine:
    """Engine.analyze_file's contract: one finding on the line that says `# break`, after
    40 ms of "running" (a real analysis takes at least that), cancellable meanwhile."""

    def __init__(self) -> None:
        self.calls: list[Path] = []  # analyses that ran to the end

    def analyze_file(
        self, path: Path, checks: list[str], *, cancel: CancelToken | None = None, **_: Any
    ) -> FileResult:
        data = path.read_bytes()
        for _ in range(40):
            if cancel is not None and cancel.cancelled:
                return FileResult(str(path), content_hash(data), cancelled=True)
            time.sleep(0.001)
        self.calls.append(path)
        line = next(i for i, t in enumerate(data.decode().splitlines(), 1) if "# break" in t)
        f = Finding(Kind.GRAPH_BREAK, Severity.WARNING, str(path), line, 1, line, 5, "Graph break")
        rep = TargetReport(f"{path.name}::compile_example", str(path), 1, "example", [f])
        return FileResult(str(path), content_hash(data), reports=[rep], ran=True)

    def close(self) -> None:
        pass


def _service(root: Path, published: list[tuple[str, list[Finding]]]) -> AnalysisService:
    cfg = Config(checks=["breaks"], checks_on_save=["breaks"])
    svc = AnalysisService(
        root,
        cfg,
        trusted=True,
        publish=lambda p, shown: published.append((p, shown()[0])),
        status=lambda _s: None,
        log=lambda _m: None,
        cache_dir=root / ".cache",
    )
    svc.engine = FakeEngine()  # type: ignore[assignment]
    return svc


def test_open_publishes_the_engines_findings_and_a_reopen_is_a_cache_hit(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("def compile_example():\n    x = 1\n    y = 2  # break\n")
    published: list[tuple[str, list[Finding]]] = []
    svc = _service(tmp_path, published)
    svc.open(str(src), src.read_text(), 1)
    _wait(lambda: any(fs and fs[0].line == 3 for _, fs in published))
    svc.close()  # lets the cache write that follows the publish land
    again: list[tuple[str, list[Finding]]] = []
    svc2 = _service(tmp_path, again)
    svc2.open(str(src), src.read_text(), 1)
    assert any(fs and fs[0].line == 3 for _, fs in again)  # at once, from the cache
    assert svc2.engine.calls == []  # type: ignore[union-attr]
    svc2.close()


def test_a_burst_of_saves_shows_the_last_text_after_at_most_one_other_analysis(
    tmp_path: Path,
) -> None:
    src = tmp_path / "m.py"
    src.write_text("def compile_example():\n    y = 2  # break\n")
    published: list[tuple[str, list[Finding]]] = []
    svc = _service(tmp_path, published)
    for i in range(1, 31):
        text = "def compile_example():\n" + "    pass\n" * i + "    y = 2  # break\n"
        src.write_text(text)
        svc.save(str(src), text, i)
    _wait(
        lambda: (
            svc.analyses.scheduler.count() == 0
            and any(fs and fs[0].line == 32 for _, fs in published)
        )
    )
    assert 1 <= len(svc.engine.calls) <= 2  # type: ignore[union-attr]
    assert [fs[0].line for _, fs in published if fs][-1] == 32
    svc.close()


def test_a_save_read_mid_write_waits_for_the_bytes_the_editor_saved(tmp_path: Path) -> None:
    """An editor truncates, then writes: a read in between sees an empty file. Its analysis
    would show a state the file never had; the save is read again instead."""
    src = tmp_path / "m.py"
    text = "def compile_example():\n    pass\n    y = 2  # break\n"
    src.write_text("")  # the editor has truncated the file and not written it yet
    published: list[tuple[str, list[Finding]]] = []
    logged: list[str] = []
    svc = _service(tmp_path, published)
    svc.ctx.log = logged.append
    svc.save(str(src), text, 2)
    _wait(lambda: any("not yet on disk as saved" in m for m in logged))
    src.write_text(text)  # the write completes
    _wait(lambda: any(fs and fs[0].line == 3 for _, fs in published))
    assert [p.name for p in svc.engine.calls] == ["m.py"]  # type: ignore[union-attr]
    svc.close()


def test_the_debouncer_runs_the_last_call_per_key_once_on_one_thread() -> None:
    from dynamo_lens.server.debounce import Debouncer

    ran: list[tuple[str, int]] = []
    threads_before = threading.active_count()
    d = Debouncer()
    for key in ("a", "b"):
        for i in range(200):
            d.call(key, 0.02, lambda key=key, i=i: ran.append((key, i)))
    d.call("c", 0.01, lambda: ran.append(("c", 0)))
    d.cancel("c")
    assert threading.active_count() <= threads_before + 1  # one thread, not one per call
    _wait(lambda: len(ran) == 2)
    assert sorted(ran) == [("a", 199), ("b", 199)]
    assert not d._due  # nothing left that could still run
    d.close()


def test_a_failing_job_is_logged_and_the_scheduler_goes_on() -> None:
    errors: list[tuple[str, str]] = []
    ran: list[int] = []

    def run(job: Job) -> None:
        if job.version == 1:
            raise RuntimeError("engine broke")
        ran.append(job.version)

    s = Scheduler(run, debounce=0.0, on_error=lambda j, e: errors.append((j.path, str(e))))
    s.submit("/w/a.py", 1, ["breaks"], "save", delay=0.0)
    _wait(lambda: bool(errors))
    s.submit("/w/a.py", 2, ["breaks"], "save", delay=0.0)
    _wait(lambda: ran == [2])
    assert errors == [("/w/a.py", "engine broke")]
    s.close()


def test_an_interrupted_analysis_is_shown_but_never_cached(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("def compile_example():\n    y = 2  # break\n")
    published: list[tuple[str, list[Finding]]] = []
    svc = _service(tmp_path, published)
    engine: FakeEngine = svc.engine  # type: ignore[assignment]
    real = engine.analyze_file

    def dies(path: Path, checks: list[str], **kw: Any) -> FileResult:
        res = real(path, checks, **kw)
        res.interrupted = True  # as when the worker died or timed out on a later unit
        return res

    engine.analyze_file = dies  # type: ignore[method-assign]
    svc.open(str(src), src.read_text(), 1)
    _wait(lambda: any(fs and fs[0].line == 2 for _, fs in published))
    svc.close()
    assert not list((tmp_path / ".cache").rglob("*.msgpack"))


def test_a_new_file_on_disk_that_declares_nothing_is_never_imported(tmp_path: Path) -> None:
    published: list[tuple[str, list[Finding]]] = []
    svc = _service(tmp_path, published)
    quiet = tmp_path / "side_effects.py"
    quiet.write_text("import os\nos.system('touch RAN')  # break\nclass M: pass\n")
    declares = tmp_path / "model.py"
    declares.write_text("def compile_example():\n    y = 2  # break\n")
    svc.disk_changed(str(quiet))
    svc.disk_changed(str(declares))
    _wait(
        lambda: (
            svc.analyses.scheduler.count() == 0 and any(p == str(declares) for p, _ in published)
        )
    )
    assert [p.name for p in svc.engine.calls] == ["model.py"]  # type: ignore[union-attr]
    svc.close()
