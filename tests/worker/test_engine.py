"""The engine with a real warm worker: cancellation, timings, zero-config guesses, progress."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES
from dynamo_lens.config import load
from dynamo_lens.engine.analysis import Engine
from dynamo_lens.engine.cancel import CancelToken

ROOT = FIXTURES / "engine"


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    cfg, problems = load(ROOT, {"backend": "inductor"})
    assert problems == []
    eng = Engine(ROOT, cfg)
    eng.start()
    yield eng
    eng.close()


def test_worker_reports_its_environment(engine: Engine) -> None:
    env = engine.environment()
    assert env["torch"].startswith("2.")
    assert env["devices"][0] == "cpu"


def test_cancel_stops_the_job_and_keeps_the_worker(engine: Engine) -> None:
    pid_before = engine.pool._idle.queue[0].proc.pid  # type: ignore[union-attr]
    token = CancelToken()
    threading.Timer(2.0, token.cancel).start()
    res = engine.analyze_file(ROOT / "spins.py", ["breaks"], cancel=token)
    assert res.cancelled  # spins.py never ends: only the cancel stops it
    pid_after = engine.pool._idle.queue[0].proc.pid  # type: ignore[union-attr]
    assert pid_after == pid_before, "a cooperative cancel must not cost a worker restart"
    # and the same worker still works
    ok = engine.analyze_file(ROOT / "small.py", ["breaks"])
    assert ok.reports and ok.reports[0].graph_count == 1


def test_timings_measure_cold_and_steady_state_against_eager(engine: Engine) -> None:
    stages: list[str] = []
    res = engine.analyze_file(
        ROOT / "small.py", ["timings"], on_progress=lambda m: stages.append(m["stage"])
    )
    assert "timings" in stages
    (rep,) = res.reports
    (t,) = rep.timings
    assert t.device == "cpu" and t.backend == "inductor"
    assert t.eager_median > 0 and t.compiled_median > 0
    assert t.cold_compile > t.compiled_median  # the first call traced and compiled
    assert t.repeats >= 1
    assert t.speedup == pytest.approx(t.eager_median / t.compiled_median)
    if t.break_even_calls is not None:
        assert t.break_even_calls > 0
    assert rep.input_shapes == ["x: float32[64, 64]", "alpha: 2.0"] or rep.input_shapes[0] == (
        "x: float32[64, 64]"
    )
    assert rep.environment["torch"].startswith("2.")
    assert rep.environment["mode"] == "default"


def test_zero_config_guess_is_labelled(engine: Engine) -> None:
    res = engine.analyze_file(ROOT / "zero_config.py", ["breaks", "recompiles"])
    names = [r.target for r in res.reports]
    assert names == ["zero_config.py::guess:Tagger"]  # NeedsArgs cannot be built without args
    (rep,) = res.reports
    assert rep.guess and rep.kind == "guess"
    assert rep.input_shapes == ["ids: int64[2, 16]"]
    assert rep.line == 5


def test_file_without_targets_runs_no_user_code(engine: Engine) -> None:
    res = engine.analyze_file(ROOT / "helpers_only.py", ["breaks"])
    assert not res.ran
    assert res.reports == [] and res.findings == []


V1 = """\
import torch


def step(x):
    return x * 2


def compile_example():
    return step, (torch.ones(4),)
"""


def test_two_workers_never_analyse_a_version_they_imported_before(tmp_path: Path) -> None:
    """A file's discovery and its units can run in different workers of a pool: a worker that
    imported the file's earlier bytes imports it afresh, so the edit is what gets analysed."""
    (tmp_path / "m.py").write_text(V1)
    cfg, problems = load(tmp_path, {"backend": "eager", "workers": 2})
    assert problems == []
    with Engine(tmp_path, cfg) as eng:
        for _ in range(2):  # each worker has now imported the first version
            assert eng.analyze_file(tmp_path / "m.py", ["breaks"]).all_findings() == []
        (tmp_path / "m.py").write_text(V1.replace("return x * 2", 'print("hi")\n    return x * 2'))
        for _ in range(2):
            res = eng.analyze_file(tmp_path / "m.py", ["breaks"])
            assert [f.line for f in res.all_findings()] == [5], res
