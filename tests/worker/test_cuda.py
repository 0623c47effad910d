"""CUDA device paths: placement, per-device equivalence and synchronised timings.

Skipped cleanly where no CUDA device exists (CI); run on a GPU machine with `pytest -m cuda`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, check_json


@pytest.mark.cuda
def test_equivalence_runs_on_cpu_and_cuda() -> None:
    rc, doc, err = check_json(
        str(FIXTURES / "equiv"), "--backend", "inductor", "--device", "cpu", "--device", "cuda:0"
    )
    assert rc == 0, (doc["findings"], err)
    (target,) = doc["targets"]
    devices = [e["device"] for e in target["equivalence"]]
    assert devices == ["cpu", "cuda:0"]
    assert all(e["ok"] and e["gradients"] == 4 for e in target["equivalence"])
    assert "cuda:0" in doc["environment"]["devices"]


@pytest.mark.cuda
def test_timings_on_cuda_are_synchronised_medians() -> None:
    rc, doc, err = check_json(
        str(FIXTURES / "engine" / "small.py"), "--checks", "timings", "--device", "cuda:0"
    )
    assert rc == 0, (doc["findings"], err)
    (target,) = doc["targets"]
    (t,) = target["timings"]
    assert t["device"] == "cuda:0" and t["backend"] == "inductor"
    assert t["eager_median"] > 0 and t["compiled_median"] > 0
    assert t["cold_compile"] > t["compiled_median"]
    assert target["environment"]["device_names"]["cuda:0"].startswith("cuda:0 (")


def test_absent_device_is_skipped_and_said() -> None:
    _, doc, _ = check_json(
        str(FIXTURES / "engine" / "small.py"), "--checks", "equivalence", "--device", "cuda:7"
    )
    (target,) = doc["targets"]
    assert target["equivalence"] == []
    assert target["environment"]["devices_missing"] == ["cuda:7"]


CUDAGRAPH_SKIP = """\
import torch


def step(x, y):
    x.add_(1)  # an input mutated in the graph: CUDA graphs are skipped for it
    return x * y


if __name__ == "__main__":
    f = torch.compile(step, mode="reduce-overhead")
    for _ in range(3):
        f(torch.ones(8, device="cuda"), torch.ones(8, device="cuda"))
"""


@pytest.mark.cuda
def test_a_cuda_graph_skip_in_a_real_run_is_a_fallback(tmp_path: Path) -> None:
    from dynamo_lens.runs.command import trace_results
    from support.tracerun import record_trace

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "step.py").write_text(CUDAGRAPH_SKIP)
    trace = record_trace(ws, "step.py", tmp_path / "trace")
    run = trace_results([trace], ws, [], "test")
    skips = [f for r in run.results for f in r.findings if f.data.get("fallback") == "cudagraphs"]
    assert skips and skips[0].message.startswith("Runs without CUDA graphs: "), skips
